import type { Readable } from "node:stream";

export interface StoredContent {
  id: string;
  size: number;
  /** Hex digests computed while the bytes streamed in. */
  md5: string;
  sha256?: string;
}

export interface PutOptions {
  /** Refuse (and delete) the content once it grows past this many bytes. */
  maxBytes?: number;
  sha256?: boolean;
}

export class ContentTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`content exceeds ${limit} bytes`);
  }
}

/** What reading an id that holds nothing rejects with (code ENOENT, as the file store's own error). */
export class ContentNotFoundError extends Error {
  readonly code = "ENOENT";
  constructor(id: string) {
    super(`content ${id} does not exist`);
  }
}

/**
 * Large bodies live outside SQLite. A service writes the content first and then commits a row that names
 * it, so a crash leaves at worst an unreferenced file, which `gc` removes; never a row without its bytes.
 * FileContentStore keeps them in files, S3ContentStore in a bucket. Reading an id that holds nothing fails with
 * an error whose `code` is "ENOENT".
 */
export interface ContentStore {
  put(source: Readable | Buffer, opts?: PutOptions): Promise<StoredContent>;
  read(id: string, range?: { offset: number; length: number }): Readable;
  readAll(id: string): Promise<Buffer>;
  /**
   * The whole body at once when this store keeps it in a database row (DbSmallContentStore), undefined when it
   * does not (the body is in files or a bucket). Readers then need neither a stream nor a copy of their own.
   */
  readSmall?(id: string): Buffer | undefined;
  delete(id: string): Promise<void>;
  /** For cleanup inside a synchronous SQLite transaction; stores that become asynchronous use delete(). */
  deleteSync(id: string): void;
  /** Removes files older than `graceMs` that `isLive` does not claim. Returns how many were removed. */
  gc(isLive: (id: string) => boolean | Promise<boolean>, graceMs?: number): Promise<number>;
}
