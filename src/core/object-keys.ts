/**
 * Property names that reach `Object.prototype` or a constructor when a user-provided name is used as a key
 * of a plain object (`obj[name][x] = v` with name `__proto__` writes to every object in the process).
 * Places that turn user-provided names into object keys refuse these, or use Maps and null-prototype objects.
 */
export const PROTOTYPE_KEYS: ReadonlySet<string> = new Set(["__proto__", "constructor", "prototype"]);

export const isPrototypeKey = (name: string): boolean => PROTOTYPE_KEYS.has(name);
