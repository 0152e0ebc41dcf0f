import type { IncomingHttpHeaders } from "node:http";
import { createBucket, deleteBucket, getBucketLocation, getBucketVersioning, headBucket, listBuckets } from "./buckets.js";
import type { S3Call } from "./call.js";
import { copyObject, uploadPartCopy } from "./copy-object.js";
import { deleteBucketCors, getBucketCors, putBucketCors } from "./cors.js";
import { S3Errors } from "./errors.js";
import { listObjectsV1, listObjectsV2 } from "./listing.js";
import { abortMultipartUpload, completeMultipartUpload, createMultipartUpload, listMultipartUploads, listParts, uploadPart } from "./multipart.js";
import { deleteObject, deleteObjects, getObject, headObject, putObject } from "./objects.js";

/** One S3 operation: its name (for logs), the R2 permission it needs on the account, and what it does. */
export interface S3Operation {
  name: string;
  permission: "r2_read" | "r2_edit";
  run(call: S3Call): Promise<void>;
}

const read = (name: string, run: S3Operation["run"]): S3Operation => ({ name, permission: "r2_read", run });
const edit = (name: string, run: S3Operation["run"]): S3Operation => ({ name, permission: "r2_edit", run });

/** Sub-resources of S3 that buckets and objects here do not have: refused with NotImplemented, never ignored. */
const UNSUPPORTED_BUCKET_SUBRESOURCES = [
  "accelerate",
  "acl",
  "analytics",
  "encryption",
  "intelligent-tiering",
  "inventory",
  "lifecycle",
  "logging",
  "metadataTable",
  "metrics",
  "notification",
  "object-lock",
  "ownershipControls",
  "policy",
  "policyStatus",
  "publicAccessBlock",
  "replication",
  "requestPayment",
  "session",
  "tagging",
  "versioning",
  "versions",
  "website",
];
const UNSUPPORTED_OBJECT_SUBRESOURCES = ["acl", "attributes", "legal-hold", "renameObject", "restore", "retention", "select", "tagging", "torrent"];

function refuseUnsupported(query: ReadonlyMap<string, string>, names: readonly string[]): void {
  for (const name of names) if (query.has(name)) throw S3Errors.notImplemented(`?${name}`);
}

/** The operation a request asks for, from its method, whether it names a bucket and a key, and its query. */
export function operationOf(
  method: string,
  bucket: string | undefined,
  key: string,
  query: ReadonlyMap<string, string>,
  headers: IncomingHttpHeaders,
): S3Operation {
  if (bucket === undefined) {
    if (method === "GET") return read("ListBuckets", listBuckets);
    throw S3Errors.methodNotAllowed(method);
  }
  if (key === "") return bucketOperation(method, query);
  refuseUnsupported(query, UNSUPPORTED_OBJECT_SUBRESOURCES);
  const copy = headers["x-amz-copy-source"] !== undefined;
  switch (method) {
    case "GET":
      return query.has("uploadId") ? read("ListParts", listParts) : read("GetObject", getObject);
    case "HEAD":
      return read("HeadObject", headObject);
    case "PUT":
      if (query.has("uploadId") || query.has("partNumber")) return copy ? edit("UploadPartCopy", uploadPartCopy) : edit("UploadPart", uploadPart);
      return copy ? edit("CopyObject", copyObject) : edit("PutObject", putObject);
    case "DELETE":
      return query.has("uploadId") ? edit("AbortMultipartUpload", abortMultipartUpload) : edit("DeleteObject", deleteObject);
    case "POST":
      if (query.has("uploads")) return edit("CreateMultipartUpload", createMultipartUpload);
      if (query.has("uploadId")) return edit("CompleteMultipartUpload", completeMultipartUpload);
      throw S3Errors.notImplemented("POST on an object (only ?uploads and ?uploadId)");
  }
  throw S3Errors.methodNotAllowed(method);
}

function bucketOperation(method: string, query: ReadonlyMap<string, string>): S3Operation {
  // Reading the versioning state has a true answer (never enabled); changing it is not supported.
  if (method === "GET" && query.has("versioning")) return read("GetBucketVersioning", getBucketVersioning);
  refuseUnsupported(query, UNSUPPORTED_BUCKET_SUBRESOURCES);
  if (query.has("cors")) {
    if (method === "GET") return read("GetBucketCors", getBucketCors);
    if (method === "PUT") return edit("PutBucketCors", putBucketCors);
    if (method === "DELETE") return edit("DeleteBucketCors", deleteBucketCors);
    throw S3Errors.methodNotAllowed(method);
  }
  switch (method) {
    case "GET": {
      if (query.has("location")) return read("GetBucketLocation", getBucketLocation);
      if (query.has("uploads")) return read("ListMultipartUploads", listMultipartUploads);
      const listType = query.get("list-type");
      if (listType === "2") return read("ListObjectsV2", listObjectsV2);
      if (listType !== undefined) throw S3Errors.invalidArgument("Invalid list type", "list-type", listType);
      return read("ListObjects", listObjectsV1);
    }
    case "HEAD":
      return read("HeadBucket", headBucket);
    case "PUT":
      return edit("CreateBucket", createBucket);
    case "DELETE":
      return edit("DeleteBucket", deleteBucket);
    case "POST":
      if (query.has("delete")) return edit("DeleteObjects", deleteObjects);
      throw S3Errors.notImplemented("POST on a bucket (browser form uploads); use PUT with a presigned URL");
  }
  throw S3Errors.methodNotAllowed(method);
}
