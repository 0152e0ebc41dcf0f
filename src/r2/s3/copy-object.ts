import { parseRangeHeader } from "../ranges.js";
import type { R2Range } from "../store.js";
import type { S3Call } from "./call.js";
import { S3Errors } from "./errors.js";
import { customMetadataFrom, httpMetadataFrom, refuseUnsupportedHeaders, storageClassFrom } from "./metadata.js";
import { conditionalFromHeaders } from "../preconditions.js";
import { copySourceConditions } from "./objects.js";
import { partNumberOf, uploadIdOf } from "./multipart.js";

/**
 * CopyObject and UploadPartCopy: the source is read from the store as a stream and written to the destination
 * as a new object or part (so a copy of any size takes no more memory than any upload). The source is in the
 * same account as the destination.
 */

/** x-amz-copy-source: `[/]bucket/key[?versionId=null]`, percent-encoded. */
function copySource(call: S3Call): { bucket: string; key: string } {
  const raw = call.header("x-amz-copy-source") ?? "";
  const [path, version] = raw.split("?versionId=");
  if (version !== undefined && version !== "null") throw S3Errors.notImplemented("x-amz-copy-source versionId (buckets are not versioned)");
  let decoded: string;
  try {
    decoded = decodeURIComponent(path.replace(/^\//, ""));
  } catch {
    decoded = "";
  }
  const slash = decoded.indexOf("/");
  if (slash <= 0 || slash === decoded.length - 1) {
    throw S3Errors.invalidArgument("Copy Source must mention the source bucket and key: sourcebucket/sourcekey", "x-amz-copy-source", raw);
  }
  return { bucket: decoded.slice(0, slash), key: decoded.slice(slash + 1) };
}

/** Opens the source for reading (with its conditions and an optional range); 412 when a condition fails. */
async function readSource(call: S3Call, range?: R2Range) {
  const source = copySource(call);
  const onlyIf = copySourceConditions(call.headers);
  let found;
  try {
    found = await call.store.get({ accountId: call.accountId, bucketName: source.bucket }, source.key, { onlyIf, range });
  } catch (e) {
    // The bucket the store did not find is the source's, not the destination's.
    if ((e as { status?: number }).status === 404) throw S3Errors.noSuchBucket(source.bucket);
    throw e;
  }
  if (!found) throw S3Errors.noSuchKey(source.key);
  if (!found.body) throw S3Errors.preconditionFailed("x-amz-copy-source-if-*");
  return { source, found: { ...found, body: found.body } };
}

export async function copyObject(call: S3Call): Promise<void> {
  refuseUnsupportedHeaders(call.headers);
  const directive = call.header("x-amz-metadata-directive") ?? "COPY";
  if (directive !== "COPY" && directive !== "REPLACE") throw S3Errors.invalidArgument("Unknown metadata directive.", "x-amz-metadata-directive", directive);
  const storageClass = storageClassFrom(call.headers);
  const src = copySource(call);
  if (src.bucket === call.bucket && src.key === call.key && directive === "COPY" && storageClass === undefined) throw S3Errors.copyToItself();
  const { found, source } = await readSource(call);
  const replace = directive === "REPLACE";
  const info = await call.store.put(call.ref, call.key, found.body, {
    httpMetadata: replace ? httpMetadataFrom(call.headers) : found.object.httpMetadata,
    customMetadata: replace ? customMetadataFrom(call.headers) : found.object.customMetadata,
    storageClass: storageClass ?? (replace ? undefined : found.object.storageClass),
    onlyIf: conditionalFromHeaders(call.headers),
    size: found.object.size,
    copySource: source,
  });
  if (!info) throw S3Errors.preconditionFailed(call.header("if-none-match") ? "If-None-Match" : "If-Match");
  call.sendXml(200, "CopyObjectResult", { LastModified: new Date(info.uploaded).toISOString(), ETag: `"${info.etag}"` });
}

export async function uploadPartCopy(call: S3Call): Promise<void> {
  const uploadId = uploadIdOf(call);
  const partNumber = partNumberOf(call);
  const rangeHeader = call.header("x-amz-copy-source-range");
  let range: R2Range | undefined;
  if (rangeHeader !== undefined) {
    range = parseRangeHeader(rangeHeader);
    if (!range || !("offset" in range) || range.length === undefined) {
      throw S3Errors.invalidArgument("The x-amz-copy-source-range value must be of the form bytes=first-last", "x-amz-copy-source-range", rangeHeader);
    }
  }
  const { found } = await readSource(call, range).catch((e: unknown) => {
    if ((e as { status?: number }).status === 416)
      throw S3Errors.invalidArgument("Range specified is not valid for the source object", "x-amz-copy-source-range", rangeHeader);
    throw e;
  });
  if (range && "offset" in range && range.offset + (range.length ?? 0) > found.object.size) {
    found.body.destroy();
    throw S3Errors.invalidArgument(`Range specified is not valid for source object of size: ${found.object.size}`, "x-amz-copy-source-range", rangeHeader);
  }
  const part = await call.store.uploadPart(call.ref, call.key, uploadId, partNumber, found.body, found.range.length);
  call.sendXml(200, "CopyPartResult", { LastModified: new Date().toISOString(), ETag: `"${part.etag}"` });
}
