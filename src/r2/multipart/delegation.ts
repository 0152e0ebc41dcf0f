import type { Readable } from "node:stream";
import type { BucketRef, R2ListPartsResult, R2ListUploadsOptions, R2ListUploadsResult, R2MultipartOptions, R2ObjectInfo, R2UploadedPart } from "../store.js";

type MaybePromise<T> = T | Promise<T>;

/** What keeps a store's multipart uploads (sqlite-multipart.ts, pg-multipart.ts): R2Store's multipart methods. */
export interface R2MultipartKeeper {
  createMultipartUpload(bucket: BucketRef, key: string, opts?: R2MultipartOptions): MaybePromise<string>;
  uploadPart(bucket: BucketRef, key: string, uploadId: string, partNumber: number, body: Readable | Buffer, size?: number): Promise<R2UploadedPart>;
  completeMultipartUpload(bucket: BucketRef, key: string, uploadId: string, parts: R2UploadedPart[]): Promise<R2ObjectInfo>;
  abortMultipartUpload(bucket: BucketRef, key: string, uploadId: string): Promise<void>;
  abortStaleUploads(cutoff: number): MaybePromise<number>;
  listMultipartUploads(bucket: BucketRef, opts?: R2ListUploadsOptions): Promise<R2ListUploadsResult>;
  listParts(bucket: BucketRef, key: string, uploadId: string, opts?: { partNumberMarker?: number; limit?: number }): Promise<R2ListPartsResult>;
}

/** R2Store's multipart methods, each handed to the store's keeper of uploads. */
export abstract class MultipartDelegation {
  protected abstract readonly multipart: R2MultipartKeeper;

  async createMultipartUpload(bucket: BucketRef, key: string, opts?: R2MultipartOptions): Promise<string> {
    return this.multipart.createMultipartUpload(bucket, key, opts);
  }

  uploadPart(bucket: BucketRef, key: string, uploadId: string, partNumber: number, body: Readable | Buffer, size?: number): Promise<R2UploadedPart> {
    return this.multipart.uploadPart(bucket, key, uploadId, partNumber, body, size);
  }

  completeMultipartUpload(bucket: BucketRef, key: string, uploadId: string, parts: R2UploadedPart[]): Promise<R2ObjectInfo> {
    return this.multipart.completeMultipartUpload(bucket, key, uploadId, parts);
  }

  abortMultipartUpload(bucket: BucketRef, key: string, uploadId: string): Promise<void> {
    return this.multipart.abortMultipartUpload(bucket, key, uploadId);
  }

  async abortStaleUploads(cutoff: number): Promise<number> {
    return this.multipart.abortStaleUploads(cutoff);
  }

  listMultipartUploads(bucket: BucketRef, opts?: R2ListUploadsOptions): Promise<R2ListUploadsResult> {
    return this.multipart.listMultipartUploads(bucket, opts);
  }

  listParts(bucket: BucketRef, key: string, uploadId: string, opts?: { partNumberMarker?: number; limit?: number }): Promise<R2ListPartsResult> {
    return this.multipart.listParts(bucket, key, uploadId, opts);
  }
}
