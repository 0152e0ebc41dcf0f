import { PassThrough, type Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import {
  AbortMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import type { ObjectStoreLocation } from "../config.js";
import { markDependency } from "../errors/dependency.js";
import type { Logger } from "../logger.js";
import { CONTENT_ID_RE, ContentMeter, newContentId } from "./meter.js";
import { ContentNotFoundError, ContentTooLargeError, type ContentStore, type PutOptions, type StoredContent } from "./store.js";

/** A stream of unknown length goes up in parts of this size, at most two at a time: bounded memory per upload. */
const PART_BYTES = 8 * 1024 * 1024;

/**
 * The node's S3 client for `--object-store-url`: path-style (bucket names never become host names), credentials
 * from the AWS SDK's chain, checksums only where S3 requires them (RGW 16 answers a streamed PutObject that carries
 * the SDK's default CRC32 trailer with 411 MissingContentLength), short connect timeout so a store that is away
 * makes a request fail fast (503) instead of hanging.
 */
export function createObjectStoreClient(location: ObjectStoreLocation): S3Client {
  return new S3Client({
    region: location.region,
    endpoint: location.endpoint,
    forcePathStyle: true,
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    maxAttempts: 2,
    requestHandler: { connectionTimeout: 2_000, requestTimeout: 30_000 },
  });
}

/** Resolves when the bucket answers (for /healthz and start-up). */
export async function pingBucket(client: S3Client, bucket: string): Promise<void> {
  try {
    await client.send(new HeadBucketCommand({ Bucket: bucket }));
  } catch (err) {
    throw markDependency(err, "object store");
  }
}

/**
 * Content in one bucket of an S3-compatible store, under `<prefix><id>` (the platform gives each area the prefix
 * `<area>/`). The same contract as the file store: a body is written whole under a new id before any row names it,
 * so a half-written upload is never visible; `gc` deletes bodies (and unfinished multipart uploads) older than a
 * grace period that no row claims. Errors of the store pass on marked as the object store's (a 503 when it is
 * unreachable).
 */
export class S3ContentStore implements ContentStore {
  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
    private readonly prefix: string,
    private readonly log?: Logger,
  ) {}

  private keyOf(id: string): string {
    if (!CONTENT_ID_RE.test(id)) throw new Error(`invalid content id ${JSON.stringify(id)}`);
    return this.prefix + id;
  }

  async put(source: Readable | Buffer, opts: PutOptions = {}): Promise<StoredContent> {
    const meter = new ContentMeter(source, opts);
    const id = newContentId();
    try {
      if (Buffer.isBuffer(source)) {
        meter.count(source);
        await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: this.keyOf(id), Body: source, ContentLength: source.length }));
      } else {
        const body = new PassThrough();
        const upload = new Upload({
          client: this.client,
          params: { Bucket: this.bucket, Key: this.keyOf(id), Body: body },
          partSize: PART_BYTES,
          queueSize: 2,
          // A failed multipart upload is aborted, so its parts do not linger.
          leavePartsOnError: false,
        });
        const uploading = upload.done();
        // A store that fails stops consuming the body: end the pipeline with its error rather than stall.
        uploading.catch((err: unknown) => body.destroy(err as Error));
        try {
          await pipeline(source, meter.transform(), body);
        } catch (err) {
          // The source broke or the size limit was hit: the upload is aborted (its parts deleted) before we answer.
          await upload.abort().catch(() => {});
          await uploading.catch(() => {});
          throw err;
        }
        await uploading;
      }
    } catch (err) {
      if (err instanceof ContentTooLargeError) {
        // A small body may have been stored whole before its last chunk failed the limit: nothing may remain.
        await this.delete(id).catch(() => {});
        throw err;
      }
      throw markDependency(err, "object store");
    }
    return meter.result(id);
  }

  read(id: string, range?: { offset: number; length: number }): Readable {
    const key = this.keyOf(id);
    const out = new PassThrough();
    if (range && range.length === 0) {
      out.end();
      return out;
    }
    const Range = range ? `bytes=${range.offset}-${range.offset + range.length - 1}` : undefined;
    this.client
      .send(new GetObjectCommand({ Bucket: this.bucket, Key: key, Range }))
      .then((res) => pipeline(res.Body as Readable, out))
      .catch((err: unknown) => out.destroy(this.readError(err, id)));
    return out;
  }

  async readAll(id: string): Promise<Buffer> {
    try {
      const res = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.keyOf(id) }));
      return Buffer.from(await res.Body!.transformToByteArray());
    } catch (err) {
      throw this.readError(err, id);
    }
  }

  private readError(err: unknown, id: string): Error {
    if ((err as { name?: string }).name === "NoSuchKey") return new ContentNotFoundError(id);
    return markDependency(err as Error, "object store");
  }

  async delete(id: string): Promise<void> {
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.keyOf(id) }));
    } catch (err) {
      throw markDependency(err, "object store");
    }
  }

  /** Starts the delete and returns: a delete that fails leaves an unclaimed body, which `gc` collects later. */
  deleteSync(id: string): void {
    this.delete(id).catch((err: unknown) => this.log?.warn({ err, id }, "could not delete content; gc will collect it"));
  }

  async gc(isLive: (id: string) => boolean | Promise<boolean>, graceMs = 60 * 60 * 1000): Promise<number> {
    const cutoff = Date.now() - graceMs;
    let removed = 0;
    try {
      let token: string | undefined;
      do {
        const page = await this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.prefix, ContinuationToken: token }));
        const dead: { Key: string }[] = [];
        for (const o of page.Contents ?? []) {
          const id = o.Key!.slice(this.prefix.length);
          if (!CONTENT_ID_RE.test(id) || !o.LastModified || o.LastModified.getTime() >= cutoff) continue;
          if (!(await isLive(id))) dead.push({ Key: o.Key! });
        }
        if (dead.length > 0) {
          await this.client.send(new DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects: dead, Quiet: true } }));
          removed += dead.length;
        }
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
      // Uploads a crashed node began and never finished: their parts take space but are no object.
      let keyMarker: string | undefined;
      let uploadIdMarker: string | undefined;
      for (;;) {
        const page = await this.client.send(
          new ListMultipartUploadsCommand({ Bucket: this.bucket, Prefix: this.prefix, KeyMarker: keyMarker, UploadIdMarker: uploadIdMarker }),
        );
        for (const u of page.Uploads ?? []) {
          if (!u.Initiated || u.Initiated.getTime() >= cutoff) continue;
          await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: u.Key, UploadId: u.UploadId }));
          removed++;
        }
        if (!page.IsTruncated) break;
        keyMarker = page.NextKeyMarker;
        uploadIdMarker = page.NextUploadIdMarker;
      }
    } catch (err) {
      throw markDependency(err, "object store");
    }
    return removed;
  }
}
