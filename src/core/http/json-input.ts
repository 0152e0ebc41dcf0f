import secureJson from "secure-json-parse";

/**
 * JSON from users (request bodies, metadata parts and headers, bodies a worker sends its bindings) is parsed here.
 * Nesting is limited before parsing: JSON.parse itself copes with deep input, but everything after it that walks
 * a value recursively (JSON.stringify when the value is stored, validation, logging) overflows the stack at a few
 * thousand levels, and V8 spends about 1.4 s parsing a million levels. No client of the API nests anywhere near
 * this deep: a KV bulk write with metadata is four levels, a gateway's DLP settings five or six.
 */
export const MAX_JSON_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

/** Index of the quote that ends a string whose content starts at `from` (or the length when it never ends). */
function endOfString(bytes: Buffer, from: number): number {
  for (;;) {
    const quote = bytes.indexOf(QUOTE, from);
    if (quote < 0) return bytes.length;
    // The quote is escaped when an odd number of backslashes precede it. The backward walk stops at `from`
    // (just past the previous quote), so each byte is looked at a bounded number of times: linear in all.
    let backslashes = 0;
    while (quote - 1 - backslashes >= from && bytes[quote - 1 - backslashes] === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return quote;
    from = quote + 1;
  }
}

/**
 * True when JSON text opens more than `limit` arrays or objects inside each other. One pass, no recursion,
 * no allocation; it stops at the first bracket past the limit. Strings are skipped with indexOf (memchr), so a
 * body that is mostly string values costs little more than a copy. Only well-formed JSON needs a right answer:
 * anything else is refused by the parser after it anyway.
 */
export function nestsDeeperThan(json: Buffer | string, limit: number = MAX_JSON_DEPTH): boolean {
  const bytes = typeof json === "string" ? Buffer.from(json, "utf8") : json;
  let depth = 0;
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i];
    if (c === QUOTE) i = endOfString(bytes, i + 1);
    else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > limit) return true;
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) depth--;
  }
  return false;
}

/**
 * JSON.parse for input from users: throws a SyntaxError (the parser's own message, one saying the JSON nests too
 * deeply, or one naming a forbidden prototype key) that callers turn into their 400, exactly as they did for
 * JSON.parse. By default an object key `__proto__`, or a `constructor` object holding `prototype`, is refused
 * (secure-json-parse, as Fastify's own body parser does): harmless in the parsed value, such keys pollute whatever a
 * later merge or assignment copies them into. `prototypeKeys: "keep"` is for data whose keys are names a user owns
 * (a script's KV or R2 metadata through a binding): JSON.parse makes them plain own properties, and the code that
 * reads such values copies them only into null-prototype objects or Maps.
 */
export function parseUserJson(json: Buffer | string, limit: number = MAX_JSON_DEPTH, prototypeKeys: "refuse" | "keep" = "refuse"): unknown {
  if (nestsDeeperThan(json, limit)) throw new SyntaxError(`JSON nests arrays and objects deeper than ${limit} levels`);
  const text = typeof json === "string" ? json : json.toString("utf8");
  return prototypeKeys === "keep" ? JSON.parse(text) : secureJson.parse(text, undefined, { protoAction: "error", constructorAction: "error" });
}

/**
 * The same rules for a value some other JSON parser built (the KV bulk stream parser): nesting past `limit`, an own
 * `__proto__` key, or a `constructor` object holding `prototype` throw a SyntaxError. Iterative, so a deep value
 * cannot overflow the stack while it is checked.
 */
export function checkUserValue(value: unknown, limit: number = MAX_JSON_DEPTH): void {
  const pending: { value: unknown; depth: number }[] = [{ value, depth: 0 }];
  for (let item = pending.pop(); item; item = pending.pop()) {
    const v = item.value;
    if (typeof v !== "object" || v === null) continue;
    const depth = item.depth + 1;
    if (depth > limit) throw new SyntaxError(`JSON nests arrays and objects deeper than ${limit} levels`);
    if (Array.isArray(v)) {
      for (const element of v) pending.push({ value: element, depth });
      continue;
    }
    if (Object.hasOwn(v, "__proto__")) throw new SyntaxError("Object contains forbidden prototype property");
    const ctor = (v as Record<string, unknown>).constructor;
    if (Object.hasOwn(v, "constructor") && typeof ctor === "object" && ctor !== null && Object.hasOwn(ctor, "prototype")) {
      throw new SyntaxError("Object contains forbidden prototype property");
    }
    for (const key of Object.keys(v)) pending.push({ value: (v as Record<string, unknown>)[key], depth });
  }
}
