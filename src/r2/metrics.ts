import type { Registry } from "prom-client";
import { OperationMetrics } from "../core/metrics/operations.js";

/**
 * R2's operations: the binding's (r2/binding.ts, as workerd names them) and the S3 API's (r2/s3/router.ts, as AWS
 * names them).
 */
const R2_OPERATIONS = new Set([
  "head",
  "get",
  "list",
  "put",
  "delete",
  "createMultipartUpload",
  "uploadPart",
  "completeMultipartUpload",
  "abortMultipartUpload",
  "ListBuckets",
  "CreateBucket",
  "DeleteBucket",
  "HeadBucket",
  "ListObjects",
  "ListObjectsV2",
  "ListMultipartUploads",
  "GetObject",
  "HeadObject",
  "PutObject",
  "CopyObject",
  "DeleteObject",
  "DeleteObjects",
  "CreateMultipartUpload",
  "UploadPart",
  "UploadPartCopy",
  "CompleteMultipartUpload",
  "AbortMultipartUpload",
  "ListParts",
  "GetBucketCors",
  "PutBucketCors",
  "DeleteBucketCors",
  "GetBucketLocation",
  "GetBucketVersioning",
]);

/** edgeplatform_r2_operations_total and edgeplatform_r2_bytes_total (core/metrics/operations.ts). */
export const r2OperationMetrics = (registry: Registry) => new OperationMetrics(registry, "r2", R2_OPERATIONS);
