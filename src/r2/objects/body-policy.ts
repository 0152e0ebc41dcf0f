/**
 * R2's one body policy: which object bodies are read whole into memory, and which are kept in the database rather
 * than in the content store. Every layer that decides it reads it here (the S3 API reading a request, the store
 * writing to the content store or a row, the embedded content store's table, the binding answering a read), so
 * the layers agree and a change is made once.
 */
const KiB = 1024;

export const R2BodyPolicy = {
  /**
   * Bodies up to this size are kept in the database beside the rows that name them: the object's row on
   * PostgreSQL (PgR2Store), the `small_bodies` table of r2.sqlite embedded (DbSmallContentStore). A row costs a few
   * microseconds; a file of its own costs an open, a write, an fsync and a rename, an S3 object a request.
   */
  rowBytes: 64 * KiB,
  /**
   * An S3 request body of announced length up to this is read whole before the store sees it: the store writes a
   * buffer in one call, about a third less CPU than a stream pipeline for the small objects that dominate
   * request counts.
   */
  wholeRequestBytes: 64 * KiB,
  /**
   * A streamed body announced up to this size is read whole before it goes to the content store: one buffer (for
   * S3, one PutObject with its length) instead of a streamed upload, which costs far more CPU per object than the
   * bytes do.
   */
  wholeStoreBytes: 256 * KiB,
  /** A binding read answers bodies up to this size with their metadata in one write: most binding reads are small. */
  wholeAnswerBytes: 64 * KiB,
} as const;

/** Whether the S3 API reads a request body of this announced size whole (chunked bodies never are). */
export const readsRequestWhole = (size: number | undefined): size is number => size !== undefined && size <= R2BodyPolicy.wholeRequestBytes;
/** Whether the store reads a streamed body of this announced size whole before writing it to the content store. */
export const storesWhole = (size: number | undefined): size is number => size !== undefined && size <= R2BodyPolicy.wholeStoreBytes;
/** Whether the binding sends a body of this length in one write with its metadata. */
export const answersWhole = (length: number): boolean => length <= R2BodyPolicy.wholeAnswerBytes;
