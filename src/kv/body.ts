import type { IncomingMessage } from "node:http";
import type { Readable } from "node:stream";
import { ApiError } from "../core/errors.js";
import { KvCodes } from "./limits.js";

/**
 * Reads a whole request body, refusing with 413 as soon as it passes `limit` bytes (without buffering the
 * excess), so an oversized value is rejected by size before anything is stored.
 */
export function readLimited(req: IncomingMessage | Readable, limit: number, what = "value"): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number((req as IncomingMessage).headers?.["content-length"]);
    if (Number.isFinite(declared) && declared > limit) {
      req.resume();
      return reject(tooLarge(what, limit, declared));
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let refused = false;
    req.on("data", (c: Buffer) => {
      if (refused) return;
      size += c.length;
      if (size > limit) {
        refused = true;
        chunks.length = 0;
        reject(tooLarge(what, limit));
        return;
      }
      chunks.push(c);
    });
    req.on("end", () => refused || resolve(Buffer.concat(chunks, size)));
    req.on("error", reject);
  });
}

function tooLarge(what: string, limit: number, size?: number): ApiError {
  const got = size === undefined ? "more than that" : `${size} bytes`;
  return new ApiError(413, KvCodes.valueTooLarge, `${what} is too large: the limit is ${limit} bytes, got ${got}`);
}
