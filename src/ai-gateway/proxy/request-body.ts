import type { IncomingMessage } from "node:http";
import { Transform } from "node:stream";
import { readBody as readLimitedBody } from "../../core/http/body.js";
import { AigErrors } from "../errors.js";

/** Collects up to `cap` bytes of a body for the log; beyond that the body is not stored (the hosted limit is 10 MB). */
export class BodyCapture {
  private chunks: Buffer[] = [];
  size = 0;
  constructor(private readonly cap: number) {}

  add(chunk: Buffer): void {
    this.size += chunk.length;
    if (this.size <= this.cap) this.chunks.push(chunk);
    else this.chunks = [];
  }

  /** The whole body, or null when it was larger than the cap. */
  buffer(): Buffer | null {
    if (this.size > this.cap) return null;
    return this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks);
  }
}

export const LOG_BODY_CAP = 10 * 1024 * 1024;

/** Reads a whole request body (for caching, retries and the universal endpoint), refusing more than `limit` bytes. */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return readLimitedBody(req, limit, () => AigErrors.bodyTooLarge(limit));
}

/** Bodies up to this size (a chat request is a few KB) are read whole: one write upstream instead of a stream. */
const SMALL_BODY = 64 * 1024;

interface TakenBody {
  /** The whole body, when it was read first. */
  body: Buffer | null;
  /** Otherwise the body as it arrives, with a copy collected for the log. */
  stream: Transform | null;
  capture: BodyCapture | null;
}

/**
 * A body that may be sent twice (retries), must be hashed first (cache) or is small is read whole;
 * a large one (an audio upload) streams to the provider as it arrives.
 */
export async function takeBody(req: IncomingMessage, mustBuffer: boolean, limit: number): Promise<TakenBody> {
  if (mustBuffer || Number(req.headers["content-length"] ?? Infinity) <= SMALL_BODY) return { body: await readBody(req, limit), stream: null, capture: null };
  const capture = new BodyCapture(LOG_BODY_CAP);
  const stream = new Transform({ transform: (chunk: Buffer, _e, cb) => (capture.add(chunk), cb(null, chunk)) });
  req.pipe(stream);
  // A client that aborts its upload must also end the upstream request (pipe alone would leave it waiting).
  req.once("close", () => {
    if (!req.complete) stream.destroy(new Error("the client aborted the request body"));
  });
  // undici listens for the stream's errors only while it writes the body to the provider. An abort before the
  // connection is up, or after the provider answered without reading on, would otherwise be an unhandled 'error'
  // event, which ends the whole process.
  stream.on("error", () => {});
  return { body: null, stream, capture };
}
