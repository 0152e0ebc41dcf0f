import qs from "qs";
import { isPrototypeKey } from "../../core/object-keys.js";

/** How far bracketed metadata may nest and how many entries an array may take (the form's field limit bounds both anyway). */
export const BracketLimits = { depth: 8, arrayLength: 100 } as const;

/** A bracketed field name refused; the caller turns it into a 400. */
export class BracketedFieldError extends Error {}

const FIELD = /^metadata((?:\[[^[\]]*\])+)$/;

/**
 * Rebuilds the `metadata` object from bracketed form fields such as `metadata[bindings][][name]`, the
 * TypeScript SDK's encoding (one field per leaf instead of one JSON part), in the order they arrived.
 *
 * qs builds the object (prototype-safe, bounded depth and array indexes). Before that, each `[]` gets an
 * explicit index by the Rack rule the SDK relies on and qs does not apply: `[list][]` appends a value;
 * `[list][][k]` fills the last element unless it already has `k`, else starts a new one. So
 * `[b][][type]=A, [b][][name]=x, [b][][type]=B` is two bindings, where qs alone would merge them into one.
 * A segment naming `__proto__`, `constructor` or `prototype`, a malformed name, or the same field twice is refused.
 */
export function metadataFromBracketedFields(fields: readonly { name: string; value: string }[]): unknown {
  const indexed: Record<string, string> = Object.create(null);
  /** For each array path seen with `[]`: its length so far and the keys its last element holds. */
  const arrays = new Map<string, { length: number; lastKeys: Set<string> }>();
  for (const { name, value } of fields) {
    const m = FIELD.exec(name);
    if (!m) throw new BracketedFieldError(`metadata field "${name}" is not of the form metadata[key][key]…`);
    const segments = m[1].slice(1, -1).split("][");
    let path = "metadata";
    segments.forEach((seg, i) => {
      if (isPrototypeKey(seg)) throw new BracketedFieldError(`metadata field "${name}": "${seg}" may not be used as a key`);
      if (seg !== "") {
        path += `[${seg}]`;
        return;
      }
      let arr = arrays.get(path);
      if (!arr) arrays.set(path, (arr = { length: 0, lastKeys: new Set() }));
      const next = segments[i + 1];
      const startsElement = next === undefined || arr.length === 0 || (i + 1 === segments.length - 1 && arr.lastKeys.has(next));
      if (startsElement) {
        arr.length++;
        arr.lastKeys = new Set();
      }
      if (next !== undefined) arr.lastKeys.add(next);
      path += `[${arr.length - 1}]`;
    });
    if (path in indexed) throw new BracketedFieldError(`metadata field "${name}" is given twice`);
    indexed[path] = value;
  }
  try {
    const parsed = qs.parse(indexed, {
      allowPrototypes: false,
      plainObjects: true,
      depth: BracketLimits.depth,
      strictDepth: true,
      arrayLimit: BracketLimits.arrayLength,
      throwOnLimitExceeded: true,
      parameterLimit: Math.max(fields.length, 1),
    });
    return parsed.metadata;
  } catch (e) {
    if (e instanceof RangeError) throw new BracketedFieldError(`metadata fields: ${e.message}`);
    throw e;
  }
}
