import { createHash, randomBytes } from "node:crypto";
import { Transform } from "node:stream";
import { ContentTooLargeError, type PutOptions, type StoredContent } from "./store.js";

/** Content ids: 20 random bytes in hex, the same in every store (a body keeps its id when it moves). */
export const CONTENT_ID_RE = /^[0-9a-f]{40}$/;
export const newContentId = () => randomBytes(20).toString("hex");

/**
 * What every ContentStore computes while a body streams in: its size and digests, with the size limit enforced
 * as bytes arrive (`transform()` fails the stream at the first byte past it). A buffer over the limit is refused
 * before anything is written.
 */
export class ContentMeter {
  private readonly md5 = createHash("md5");
  private readonly sha;
  private size = 0;

  constructor(
    source: Buffer | unknown,
    private readonly opts: PutOptions,
  ) {
    if (Buffer.isBuffer(source) && opts.maxBytes !== undefined && source.length > opts.maxBytes) throw new ContentTooLargeError(opts.maxBytes);
    this.sha = opts.sha256 ? createHash("sha256") : undefined;
  }

  count(chunk: Buffer): void {
    this.size += chunk.length;
    this.md5.update(chunk);
    this.sha?.update(chunk);
  }

  /** A pass-through that counts what flows and fails past the size limit. */
  transform(): Transform {
    return new Transform({
      transform: (chunk: Buffer, _enc, cb) => {
        if (this.opts.maxBytes !== undefined && this.size + chunk.length > this.opts.maxBytes) return cb(new ContentTooLargeError(this.opts.maxBytes));
        this.count(chunk);
        cb(null, chunk);
      },
    });
  }

  result(id: string): StoredContent {
    return { id, size: this.size, md5: this.md5.digest("hex"), sha256: this.sha?.digest("hex") };
  }
}
