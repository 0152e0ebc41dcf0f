import { randomBytes } from "node:crypto";
import type { R2BucketInfo, R2BucketUsage, R2ObjectInfo } from "./store.js";

/** Rows of the R2 database, as both backends read them (sqlite-migrations.ts, pg-migrations.ts), and their API shapes. */
export interface BucketRow {
  id: number;
  name: string;
  created_at: string;
  location: string;
  storage_class: string;
}
export interface ObjectRow {
  key: string;
  version: string;
  size: number;
  etag: string;
  uploaded: number;
  http: string;
  custom: string;
  checksums: string;
  storage_class: string;
  segments: string;
}
export type Segment = [contentId: string, size: number];

/** A new object version id (what R2 reports as `version`). */
export const newVersion = () => randomBytes(16).toString("hex");

export const bucketInfo = (r: BucketRow): R2BucketInfo => ({ name: r.name, creationDate: r.created_at, location: r.location, storageClass: r.storage_class });

export function objectInfo(r: ObjectRow, withMetadata = true): R2ObjectInfo {
  return {
    key: r.key,
    version: r.version,
    size: r.size,
    etag: r.etag,
    uploaded: r.uploaded,
    httpMetadata: withMetadata ? JSON.parse(r.http) : {},
    customMetadata: withMetadata ? JSON.parse(r.custom) : {},
    checksums: JSON.parse(r.checksums),
    storageClass: r.storage_class,
  };
}

/** One bucket's usage as the stores count it (PostgreSQL answers counts and sums as text: BIGINT and NUMERIC). */
export interface UsageRow {
  bucket_name: string;
  object_count: number | string;
  payload_size: number | string;
  metadata_size: number | string;
  upload_count: number | string;
}

export const usageOf = (r: UsageRow): R2BucketUsage => ({
  bucketName: r.bucket_name,
  objectCount: Number(r.object_count),
  payloadSize: Number(r.payload_size),
  metadataSize: Number(r.metadata_size),
  uploadCount: Number(r.upload_count),
});
