import { R2Errors } from "./errors.js";

/**
 * PostgreSQL text cannot hold U+0000: a key, name or listing bound with it is refused as invalid (400) rather than
 * failing in the database. (SQLite stores such keys; S3 clients practically never send them.)
 */
export function assertPgText(...values: (string | undefined)[]): void {
  for (const v of values) if (typeof v === "string" && v.includes("\u0000")) throw R2Errors.keyWithNul();
}
