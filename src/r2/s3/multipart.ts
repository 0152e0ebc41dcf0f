import { R2Limits } from "../limits.js";
import { type R2UploadedPart } from "../store.js";
import { ownerOf } from "./buckets.js";
import type { S3Call } from "./call.js";
import { S3Errors } from "./errors.js";
import { nameEncoder, pageSize } from "./listing.js";
import { customMetadataFrom, httpMetadataFrom, refuseUnsupportedHeaders, s3StorageClass, storageClassFrom } from "./metadata.js";
import { elementsOf, parseXml, textOf } from "./xml.js";

/** Multipart uploads: Create, UploadPart, Complete, Abort, ListParts, ListMultipartUploads. */

const CHECKSUM_ALGORITHMS = new Set(["CRC32", "SHA1", "SHA256"]);

export function uploadIdOf(call: S3Call): string {
  const id = call.query.get("uploadId");
  if (!id) throw S3Errors.noSuchUpload(id ?? "");
  return id;
}

export function partNumberOf(call: S3Call): number {
  const raw = call.query.get("partNumber") ?? "";
  const n = /^\d{1,5}$/.test(raw) ? Number(raw) : NaN;
  if (!(n >= 1 && n <= R2Limits.maxParts)) {
    throw S3Errors.invalidArgument(`Part number must be an integer between 1 and ${R2Limits.maxParts}, inclusive`, "partNumber", raw);
  }
  return n;
}

export async function createMultipartUpload(call: S3Call): Promise<void> {
  refuseUnsupportedHeaders(call.headers);
  // Each part's checksum is checked as it arrives; the algorithm named here only says which one the client sends.
  const algorithm = call.header("x-amz-checksum-algorithm");
  if (algorithm !== undefined && !CHECKSUM_ALGORITHMS.has(algorithm.toUpperCase())) throw S3Errors.notImplemented(`x-amz-checksum-algorithm: ${algorithm}`);
  const uploadId = await call.store.createMultipartUpload(call.ref, call.key, {
    httpMetadata: httpMetadataFrom(call.headers),
    customMetadata: customMetadataFrom(call.headers),
    storageClass: storageClassFrom(call.headers),
  });
  call.sendXml(200, "InitiateMultipartUploadResult", { Bucket: call.bucket!, Key: call.key, UploadId: uploadId });
}

export async function uploadPart(call: S3Call): Promise<void> {
  const uploadId = uploadIdOf(call);
  const partNumber = partNumberOf(call);
  const part = await call.store.uploadPart(call.ref, call.key, uploadId, partNumber, await call.bodyForStore(), call.declaredSize());
  call.sendEmpty(200, { etag: `"${part.etag}"`, ...call.verifiedChecksumHeaders() });
}

export async function completeMultipartUpload(call: S3Call): Promise<void> {
  const uploadId = uploadIdOf(call);
  const doc = parseXml(await call.smallBody(), "CompleteMultipartUpload");
  const parts: R2UploadedPart[] = elementsOf(doc, "Part").map((p) => {
    const number = (textOf(p, "PartNumber") ?? "").trim();
    const etag = textOf(p, "ETag");
    if (!/^\d{1,5}$/.test(number) || etag === undefined) throw S3Errors.malformedXml();
    return { partNumber: Number(number), etag: etag.trim().replace(/^"|"$/g, "") };
  });
  if (parts.length === 0) throw S3Errors.malformedXml();
  if (parts.some((p, i) => i > 0 && p.partNumber <= parts[i - 1].partNumber)) throw S3Errors.invalidPartOrder();
  const info = await call.store.completeMultipartUpload(call.ref, call.key, uploadId, parts);
  const host = call.req.headers.host ?? "";
  call.sendXml(200, "CompleteMultipartUploadResult", {
    Location: `http://${host}/${encodeURIComponent(call.bucket!)}/${call.key.split("/").map(encodeURIComponent).join("/")}`,
    Bucket: call.bucket!,
    Key: call.key,
    ETag: `"${info.etag}"`,
  });
}

export async function abortMultipartUpload(call: S3Call): Promise<void> {
  await call.store.abortMultipartUpload(call.ref, call.key, uploadIdOf(call));
  call.sendEmpty(204);
}

export async function listParts(call: S3Call): Promise<void> {
  const uploadId = uploadIdOf(call);
  const maxParts = pageSize(call, "max-parts");
  const markerRaw = call.query.get("part-number-marker") ?? "0";
  if (!/^\d{1,5}$/.test(markerRaw)) throw S3Errors.invalidArgument("part-number-marker must be an integer", "part-number-marker", markerRaw);
  const marker = Number(markerRaw);
  // max-parts=0 still checks the upload exists, and lists nothing.
  const listed = await call.store.listParts(call.ref, call.key, uploadId, { partNumberMarker: marker, limit: Math.max(maxParts, 1) });
  const page = maxParts === 0 ? { ...listed, parts: [], truncated: false, nextPartNumberMarker: undefined } : listed;
  call.sendXml(200, "ListPartsResult", {
    Bucket: call.bucket!,
    Key: call.key,
    UploadId: uploadId,
    PartNumberMarker: marker,
    ...(page.nextPartNumberMarker !== undefined ? { NextPartNumberMarker: page.nextPartNumberMarker } : {}),
    MaxParts: maxParts,
    IsTruncated: page.truncated,
    Part: page.parts.map((p) => ({ PartNumber: p.partNumber, LastModified: new Date(p.uploaded).toISOString(), ETag: `"${p.etag}"`, Size: p.size })),
    Initiator: ownerOf(call),
    Owner: ownerOf(call),
    StorageClass: s3StorageClass(page.storageClass),
  });
}

export async function listMultipartUploads(call: S3Call): Promise<void> {
  const encode = nameEncoder(call);
  const maxUploads = pageSize(call, "max-uploads");
  const prefix = call.query.get("prefix") ?? "";
  const delimiter = call.query.get("delimiter") || undefined;
  const keyMarker = call.query.get("key-marker") ?? "";
  const uploadIdMarker = call.query.get("upload-id-marker") ?? "";
  const listed = await call.store.listMultipartUploads(call.ref, {
    prefix,
    delimiter,
    keyMarker: keyMarker || undefined,
    uploadIdMarker: uploadIdMarker || undefined,
    limit: Math.max(maxUploads, 1),
  });
  // max-uploads=0 still checks the bucket exists, and lists nothing.
  const page = maxUploads === 0 ? { uploads: [], delimitedPrefixes: [], truncated: false, nextKeyMarker: undefined, nextUploadIdMarker: undefined } : listed;
  call.sendXml(200, "ListMultipartUploadsResult", {
    Bucket: call.bucket!,
    KeyMarker: encode(keyMarker),
    UploadIdMarker: uploadIdMarker,
    ...(page.nextKeyMarker !== undefined ? { NextKeyMarker: encode(page.nextKeyMarker) } : {}),
    ...(page.nextUploadIdMarker !== undefined ? { NextUploadIdMarker: page.nextUploadIdMarker } : {}),
    ...(delimiter !== undefined ? { Delimiter: encode(delimiter) } : {}),
    Prefix: encode(prefix),
    MaxUploads: maxUploads,
    IsTruncated: page.truncated,
    ...(call.query.has("encoding-type") ? { EncodingType: "url" } : {}),
    Upload: page.uploads.map((u) => ({
      Key: encode(u.key),
      UploadId: u.uploadId,
      Initiator: ownerOf(call),
      Owner: ownerOf(call),
      StorageClass: s3StorageClass(u.storageClass),
      Initiated: new Date(u.initiated).toISOString(),
    })),
    CommonPrefixes: page.delimitedPrefixes.map((p) => ({ Prefix: encode(p) })),
  });
}
