import { R2Limits } from "../limits.js";
import { type R2ListResult, type R2ObjectInfo } from "../store.js";
import { ownerOf } from "./buckets.js";
import type { S3Call } from "./call.js";
import { S3Errors } from "./errors.js";
import { s3StorageClass } from "./metadata.js";
import type { XmlContent } from "./xml.js";

/** ListObjectsV2 and ListObjects (v1) over the store's listing. */

/** max-keys / max-uploads / max-parts: S3 takes any count and answers at most 1,000. */
export function pageSize(call: S3Call, param: string): number {
  const raw = call.query.get(param);
  if (raw === undefined) return R2Limits.maxListLimit;
  if (!/^\d{1,10}$/.test(raw)) throw S3Errors.invalidArgument(`Provided ${param} not an integer or within integer range`, param, raw);
  return Math.min(Number(raw), R2Limits.maxListLimit);
}

/** encoding-type=url: names come back percent-encoded (so that any key survives XML). */
export function nameEncoder(call: S3Call): (s: string) => string {
  const type = call.query.get("encoding-type");
  if (type === undefined) return (s) => s;
  if (type !== "url") throw S3Errors.invalidArgument("Invalid Encoding Method specified in Request", "encoding-type", type);
  return (s) => encodeURIComponent(s);
}

function contents(call: S3Call, objects: R2ObjectInfo[], encode: (s: string) => string, withOwner: boolean): XmlContent[] {
  return objects.map((o) => ({
    Key: encode(o.key),
    LastModified: new Date(o.uploaded).toISOString(),
    ETag: `"${o.etag}"`,
    Size: o.size,
    StorageClass: s3StorageClass(o.storageClass),
    ...(withOwner ? { Owner: ownerOf(call) } : {}),
  }));
}

/** One page from the store; a page of 0 keys asks the store for nothing (it takes 1..1,000). */
async function listPage(
  call: S3Call,
  opts: { prefix?: string; delimiter?: string; cursor?: string; startAfter?: string; limit: number },
): Promise<R2ListResult> {
  if (opts.limit === 0) {
    if (!(await call.store.getBucket(call.accountId, call.bucket!))) throw S3Errors.noSuchBucket(call.bucket!);
    return { objects: [], delimitedPrefixes: [], truncated: false };
  }
  return call.store.list(call.ref, opts);
}

export async function listObjectsV2(call: S3Call): Promise<void> {
  const encode = nameEncoder(call);
  const maxKeys = pageSize(call, "max-keys");
  const prefix = call.query.get("prefix") ?? "";
  const delimiter = call.query.get("delimiter") || undefined;
  const token = call.query.get("continuation-token");
  const startAfter = call.query.get("start-after");
  if (token === "") throw S3Errors.invalidArgument("The continuation token provided is incorrect", "continuation-token", "");
  const page = await listPage(call, { prefix, delimiter, cursor: token, startAfter, limit: maxKeys });
  call.sendXml(200, "ListBucketResult", {
    Name: call.bucket!,
    Prefix: encode(prefix),
    ...(delimiter !== undefined ? { Delimiter: encode(delimiter) } : {}),
    ...(startAfter !== undefined ? { StartAfter: encode(startAfter) } : {}),
    ...(token !== undefined ? { ContinuationToken: token } : {}),
    MaxKeys: maxKeys,
    KeyCount: page.objects.length + page.delimitedPrefixes.length,
    IsTruncated: page.truncated,
    ...(page.cursor ? { NextContinuationToken: page.cursor } : {}),
    ...(call.query.has("encoding-type") ? { EncodingType: "url" } : {}),
    Contents: contents(call, page.objects, encode, call.query.get("fetch-owner") === "true"),
    CommonPrefixes: page.delimitedPrefixes.map((p) => ({ Prefix: encode(p) })),
  });
}

export async function listObjectsV1(call: S3Call): Promise<void> {
  const encode = nameEncoder(call);
  const maxKeys = pageSize(call, "max-keys");
  const prefix = call.query.get("prefix") ?? "";
  const delimiter = call.query.get("delimiter") || undefined;
  const marker = call.query.get("marker") ?? "";
  const page = await listPage(call, { prefix, delimiter, startAfter: marker || undefined, limit: maxKeys });
  // The next page starts after the last item of this one, object or common prefix, whichever sorts last.
  const lastKey = page.objects.at(-1)?.key ?? "";
  const lastPrefix = page.delimitedPrefixes.at(-1) ?? "";
  const nextMarker = lastKey > lastPrefix ? lastKey : lastPrefix;
  call.sendXml(200, "ListBucketResult", {
    Name: call.bucket!,
    Prefix: encode(prefix),
    Marker: encode(marker),
    ...(page.truncated ? { NextMarker: encode(nextMarker) } : {}),
    MaxKeys: maxKeys,
    ...(delimiter !== undefined ? { Delimiter: encode(delimiter) } : {}),
    IsTruncated: page.truncated,
    ...(call.query.has("encoding-type") ? { EncodingType: "url" } : {}),
    Contents: contents(call, page.objects, encode, true),
    CommonPrefixes: page.delimitedPrefixes.map((p) => ({ Prefix: encode(p) })),
  });
}
