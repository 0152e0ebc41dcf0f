import type { IncomingMessage } from "node:http";
import type { Readable } from "node:stream";
import { EdgeError } from "../core/errors.js";
import { KvCodes } from "./limits.js";

/**
 * How much of an oversized body is still read (and dropped) before answering 413. Many HTTP clients do not read
 * a response until they finish sending, so answering early would show them a reset instead of the error.
 * Past this the connection is cut short.
 */
const DRAIN_BYTES = 32 * 1024 * 1024;

/**
 * Reads a whole request body, refusing with 413 once it passes `limit` bytes (the excess is never buffered),
 * so an oversized value is rejected by size before anything is stored.
 */
export function readLimited(req: IncomingMessage | Readable, limit: number, what = "value"): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number((req as IncomingMessage).headers?.["content-length"]);
    if (Number.isFinite(declared) && declared > limit + DRAIN_BYTES) {
      req.resume();
      return reject(tooLarge(what, limit, declared));
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size <= limit) {
        chunks.push(c);
        return;
      }
      chunks.length = 0;
      if (size > limit + DRAIN_BYTES && !settled) {
        settled = true;
        reject(tooLarge(what, limit));
      }
    });
    req.on("end", () => {
      if (settled) return;
      settled = true;
      if (size > limit) reject(tooLarge(what, limit, size));
      else resolve(Buffer.concat(chunks, size));
    });
    req.on("error", (e) => {
      if (settled) return;
      settled = true;
      reject(e);
    });
  });
}

function tooLarge(what: string, limit: number, size?: number): EdgeError {
  const got = size === undefined ? "more than that" : `${size} bytes`;
  return new EdgeError(413, KvCodes.valueTooLarge, `${what} is too large: the limit is ${limit} bytes, got ${got}`);
}
