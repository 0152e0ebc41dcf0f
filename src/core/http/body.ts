import type { IncomingMessage } from "node:http";
import type { Readable } from "node:stream";
import { CoreErrors, type EdgeError } from "../errors.js";

/**
 * How much of an oversized body is still read (and dropped) before answering 413. Many HTTP clients do not read
 * a response until they finish sending, so answering early would show them a reset instead of the error.
 * Past this the connection is cut short.
 */
const DRAIN_BYTES = 32 * 1024 * 1024;

/** The refusal for a body over `maxBytes`; `received` is its size when the whole body was counted. */
export type TooLarge = (maxBytes: number, received?: number) => EdgeError;

/**
 * Reads a whole request body (or any stream), refusing with `tooLarge` (by default core's 413) once it passes
 * `maxBytes`: the excess is never buffered, so an oversized body is rejected by size before anything is stored.
 * A client that stops sending before the end gets CoreErrors.bodyIncomplete (it will not see it, but the log will).
 */
export function readBody(source: IncomingMessage | Readable, maxBytes: number, tooLarge: TooLarge = CoreErrors.bodyTooLarge): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number((source as IncomingMessage).headers?.["content-length"]);
    if (Number.isFinite(declared) && declared > maxBytes + DRAIN_BYTES) {
      source.resume();
      return reject(tooLarge(maxBytes, declared));
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (fn: () => void) => {
      if (settled) return;
      settled = true;
      fn();
    };
    source.on("data", (c: Buffer) => {
      size += c.length;
      if (size <= maxBytes) {
        chunks.push(c);
        return;
      }
      chunks.length = 0;
      if (size > maxBytes + DRAIN_BYTES) settle(() => reject(tooLarge(maxBytes)));
    });
    source.on("end", () => settle(() => (size > maxBytes ? reject(tooLarge(maxBytes, size)) : resolve(Buffer.concat(chunks, size)))));
    source.on("error", (e) => settle(() => reject(e)));
    source.on("close", () => settle(() => reject(CoreErrors.bodyIncomplete())));
  });
}

/**
 * Reads and drops the rest of a body refused before it was read (Fastify refuses a declared length over a route's
 * limit at once), so that a client which reads no answer until it has sent its body sees the refusal instead of a
 * reset. Resolves true once the body has ended, false when it is longer than DRAIN_BYTES (declared or counted) or
 * the request ended otherwise (the client left; a slow body was refused): then the answer closes the connection.
 */
export function drainRefusedBody(req: IncomingMessage): Promise<boolean> {
  if (req.complete) return Promise.resolve(true);
  const declared = Number(req.headers["content-length"]);
  if ((Number.isFinite(declared) && declared > DRAIN_BYTES) || req.destroyed) return Promise.resolve(false);
  return new Promise((resolve) => {
    let size = 0;
    const done = (drained: boolean) => {
      req.off("data", count);
      req.off("end", ended);
      req.off("close", closed);
      resolve(drained);
    };
    const count = (c: Buffer) => {
      size += c.length;
      if (size > DRAIN_BYTES) done(false);
    };
    const ended = () => done(true);
    const closed = () => done(false);
    req.on("data", count);
    req.once("end", ended);
    req.once("close", closed);
    req.resume();
  });
}
