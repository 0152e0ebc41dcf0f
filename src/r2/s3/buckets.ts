import type { S3Call } from "./call.js";
import { S3Errors } from "./errors.js";
import { refuseUnsupportedHeaders } from "./metadata.js";
import { parseXml, textOf } from "./xml.js";

/** ListBuckets, CreateBucket, HeadBucket, DeleteBucket and GetBucketLocation. */

/** Location constraints a bucket may be created with: R2's location hints, or a region that means "anywhere". */
const LOCATION_HINTS = new Set(["wnam", "enam", "weur", "eeur", "apac", "oc"]);
const ANYWHERE = new Set(["", "auto", "us-east-1"]);
const MAX_BUCKETS_PAGE = 10_000;

export const ownerOf = (call: S3Call) => ({ ID: call.accountId, DisplayName: call.accountId });

export async function listBuckets(call: S3Call): Promise<void> {
  const prefix = call.query.get("prefix") ?? "";
  const token = call.query.get("continuation-token");
  const maxRaw = call.query.get("max-buckets");
  const max = maxRaw === undefined ? MAX_BUCKETS_PAGE : Number(maxRaw);
  if (!Number.isInteger(max) || max < 1 || max > MAX_BUCKETS_PAGE) {
    throw S3Errors.invalidArgument(`max-buckets must be an integer between 1 and ${MAX_BUCKETS_PAGE}`, "max-buckets", maxRaw);
  }
  const startAfter = token ? Buffer.from(token, "base64url").toString("utf8") : undefined;
  const all = (await call.store.listBuckets(call.accountId, { startAfter })).filter((b) => b.name.startsWith(prefix));
  const page = all.slice(0, max);
  const truncated = all.length > max;
  call.sendXml(200, "ListAllMyBucketsResult", {
    Owner: ownerOf(call),
    Buckets: { Bucket: page.map((b) => ({ Name: b.name, CreationDate: b.creationDate })) },
    ...(truncated ? { ContinuationToken: Buffer.from(page[page.length - 1].name, "utf8").toString("base64url") } : {}),
    ...(prefix ? { Prefix: prefix } : {}),
  });
}

export async function createBucket(call: S3Call): Promise<void> {
  refuseUnsupportedHeaders(call.headers);
  if (call.header("x-amz-bucket-object-lock-enabled") === "true") throw S3Errors.notImplemented("x-amz-bucket-object-lock-enabled");
  const body = await call.smallBody();
  let location = "";
  if (body.length > 0) location = (textOf(parseXml(body, "CreateBucketConfiguration"), "LocationConstraint") ?? "").trim().toLowerCase();
  if (!ANYWHERE.has(location) && !LOCATION_HINTS.has(location)) throw S3Errors.invalidLocationConstraint(location);
  await call.store.createBucket(call.accountId, call.bucket!, { location: LOCATION_HINTS.has(location) ? location : undefined });
  call.sendEmpty(200, { location: `/${call.bucket}` });
}

export async function headBucket(call: S3Call): Promise<void> {
  if (!(await call.store.getBucket(call.accountId, call.bucket!))) throw S3Errors.noSuchBucket(call.bucket!);
  call.sendEmpty(200, { "x-amz-bucket-region": "auto" });
}

export async function deleteBucket(call: S3Call): Promise<void> {
  await call.store.deleteBucket(call.accountId, call.bucket!);
  call.sendEmpty(204);
}

/** Every bucket answers in region `auto`, the one its requests are signed for (its location hint is not a region). */
export async function getBucketLocation(call: S3Call): Promise<void> {
  if (!(await call.store.getBucket(call.accountId, call.bucket!))) throw S3Errors.noSuchBucket(call.bucket!);
  call.sendXml(200, "LocationConstraint", { "#text": "auto" });
}

/** Buckets here are never versioned: the answer of a bucket on which versioning was never enabled (no Status). */
export async function getBucketVersioning(call: S3Call): Promise<void> {
  if (!(await call.store.getBucket(call.accountId, call.bucket!))) throw S3Errors.noSuchBucket(call.bucket!);
  call.sendXml(200, "VersioningConfiguration", {});
}
