import { R2Errors } from "../errors.js";
import type { R2Range } from "../store.js";

/** Turns a requested range into the bytes to serve, clipped to the object; 416 when nothing of it exists. */
export function resolveRange(range: R2Range | undefined, size: number): { offset: number; length: number } {
  if (!range) return { offset: 0, length: size };
  if ("suffix" in range) {
    const n = range.suffix;
    if (!Number.isSafeInteger(n) || n < 0) throw R2Errors.invalidRangeField("suffix");
    if (n === 0 && size > 0) throw R2Errors.rangeNotSatisfiable();
    const length = Math.min(n, size);
    return { offset: size - length, length };
  }
  const offset = range.offset ?? 0;
  if (!Number.isSafeInteger(offset) || offset < 0) throw R2Errors.invalidRangeField("offset");
  if (range.length !== undefined && (!Number.isSafeInteger(range.length) || range.length < 0)) throw R2Errors.invalidRangeField("length");
  if (offset > size || (offset === size && size > 0)) throw R2Errors.rangeNotSatisfiable();
  const length = Math.min(range.length ?? size - offset, size - offset);
  return { offset, length };
}

/**
 * Parses a single-range `bytes=` header (`a-b`, `a-`, `-n`). Returns undefined for a header that is not
 * a byte range at all (RFC 9110 says to ignore it); a range that is well formed but backwards is a 416.
 */
export function parseRangeHeader(header: string | undefined): R2Range | undefined {
  if (!header) return undefined;
  const m = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!m || (m[1] === "" && m[2] === "")) return undefined;
  if (m[1] === "") return { suffix: Number(m[2]) };
  const offset = Number(m[1]);
  if (m[2] === "") return { offset };
  const last = Number(m[2]);
  if (last < offset) throw R2Errors.rangeNotSatisfiable();
  return { offset, length: last - offset + 1 };
}
