import type { IncomingHttpHeaders } from "node:http";
import { UNTRUSTED_CONTENT_HEADERS } from "../../core/http/untrusted-content.js";
import { pipeline, type Readable } from "node:stream";
import { conditionalFromHeaders, conditionHolds } from "../objects/preconditions.js";
import { parseRangeHeader, resolveRange } from "../objects/ranges.js";
import type { R2Conditional, R2ObjectInfo, R2Range } from "../store.js";
import { assertKey } from "../validation.js";
import type { S3Call } from "./call.js";
import { fromStoreError, S3Errors } from "./errors.js";
import { customMetadataFrom, httpMetadataFrom, objectHeaders, refuseUnsupportedHeaders, responseOverrides, storageClassFrom } from "./metadata.js";
import { elementsOf, parseXml, textOf } from "./xml.js";

/** PutObject, GetObject, HeadObject, DeleteObject and DeleteObjects. */

/** Objects have one version here: `versionId=null` (S3's name for it) is that one; any other id is refused. */
export function refuseVersionId(call: S3Call): void {
  const v = call.query.get("versionId");
  if (v !== undefined && v !== "null") throw S3Errors.notImplemented("versionId (buckets are not versioned)");
}

export async function putObject(call: S3Call): Promise<void> {
  refuseUnsupportedHeaders(call.headers);
  const info = await call.store.put(call.ref, call.key, await call.bodyForStore(), {
    httpMetadata: httpMetadataFrom(call.headers),
    customMetadata: customMetadataFrom(call.headers),
    storageClass: storageClassFrom(call.headers),
    onlyIf: conditionalFromHeaders(call.headers),
    size: call.declaredSize(),
  });
  if (!info) throw S3Errors.preconditionFailed(call.header("if-none-match") ? "If-None-Match" : "If-Match");
  call.sendEmpty(200, { etag: `"${info.etag}"`, ...call.verifiedChecksumHeaders() });
}

/**
 * Why conditions failed on a read: a failed If-Match or If-Unmodified-Since is 412; a failed If-None-Match or
 * If-Modified-Since alone means the client's copy is current, 304 (RFC 7232 §6, as S3 does it).
 */
function failedReadStatus(cond: R2Conditional, object: R2ObjectInfo): 304 | 412 {
  const ifMatch: R2Conditional = { etagMatches: cond.etagMatches, uploadedBefore: cond.uploadedBefore, secondsGranularity: cond.secondsGranularity };
  return conditionHolds(ifMatch, object) ? 304 : 412;
}

/** The Range of a read; a range on an empty object has nothing to satisfy it. */
function readRange(call: S3Call): R2Range | undefined {
  if (call.query.has("partNumber")) throw S3Errors.notImplemented("partNumber on reads");
  return parseRangeHeader(call.header("range"));
}

function notModifiedOrFailed(call: S3Call, cond: R2Conditional, object: R2ObjectInfo): void {
  const status = failedReadStatus(cond, object);
  if (status === 412) throw S3Errors.preconditionFailed(cond.etagMatches ? "If-Match" : "If-Unmodified-Since");
  const h = objectHeaders(object);
  call.sendEmpty(304, { etag: h.etag, "last-modified": h["last-modified"] });
}

export async function getObject(call: S3Call): Promise<void> {
  refuseVersionId(call);
  const onlyIf = conditionalFromHeaders(call.headers);
  const range = readRange(call);
  const overrides = responseOverrides(call.query);
  const found = await call.store.get(call.ref, call.key, { onlyIf, range });
  if (!found) throw S3Errors.noSuchKey(call.key);
  if (!found.body) return notModifiedOrFailed(call, onlyIf!, found.object);
  const r = found.range;
  if (range && found.object.size === 0) {
    found.body.destroy();
    throw S3Errors.invalidRange(0);
  }
  // The sandbox last: no stored header or response-* override replaces it.
  const headers: Record<string, string> = {
    ...call.responseHeaders,
    ...objectHeaders(found.object),
    ...overrides,
    ...UNTRUSTED_CONTENT_HEADERS,
    "content-length": String(r.length),
  };
  if (range) headers["content-range"] = `bytes ${r.offset}-${r.offset + r.length - 1}/${found.object.size}`;
  call.objectSize = r.length;
  if (found.bytes) {
    call.res.writeHead(range ? 206 : 200, headers);
    call.res.end(found.bytes);
    return;
  }
  // The status waits for the body's first bytes: a store that cannot deliver them is then a 503 the client retries.
  const first = await firstChunk(found.body);
  call.res.writeHead(range ? 206 : 200, headers);
  if (!first) return void call.res.end();
  call.res.write(first);
  // A read that fails later cannot change its status any more: the connection is cut, and the client sees a short body.
  pipeline(found.body, call.res, () => undefined);
}

/** The first chunk of `body` (undefined when it is empty), leaving the stream paused on the rest; rejects if it fails first. */
function firstChunk(body: Readable): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const settle = (fn: () => void) => {
      body.off("data", onData).off("end", onEnd).off("error", onError);
      fn();
    };
    const onData = (chunk: Buffer) => settle(() => (body.pause(), resolve(chunk)));
    const onEnd = () => settle(() => resolve(undefined));
    const onError = (err: Error) => settle(() => reject(err));
    body.on("data", onData).once("end", onEnd).once("error", onError);
  });
}

export async function headObject(call: S3Call): Promise<void> {
  refuseVersionId(call);
  const onlyIf = conditionalFromHeaders(call.headers);
  const range = readRange(call);
  const object = await call.store.head(call.ref, call.key);
  if (!object) throw S3Errors.noSuchKey(call.key);
  if (onlyIf && !conditionHolds(onlyIf, object)) return notModifiedOrFailed(call, onlyIf, object);
  if (range && object.size === 0) throw S3Errors.invalidRange(0);
  let r: { offset: number; length: number };
  try {
    r = resolveRange(range, object.size);
  } catch (e) {
    throw fromStoreError(e, call) ?? e;
  }
  const headers: Record<string, string> = { ...objectHeaders(object), ...responseOverrides(call.query), "content-length": String(r.length) };
  if (range) headers["content-range"] = `bytes ${r.offset}-${r.offset + r.length - 1}/${object.size}`;
  call.objectSize = r.length;
  call.sendEmpty(range ? 206 : 200, headers);
}

export async function deleteObject(call: S3Call): Promise<void> {
  refuseVersionId(call);
  await call.store.delete(call.ref, call.key);
  call.sendEmpty(204);
}

/** S3 refuses a DeleteObjects of more keys than this with MalformedXML. */
const MAX_DELETE_KEYS = 1000;

export async function deleteObjects(call: S3Call): Promise<void> {
  const doc = parseXml(await call.smallBody(), "Delete");
  const quiet = (textOf(doc, "Quiet") ?? "false").trim().toLowerCase() === "true";
  const objects = elementsOf(doc, "Object");
  if (objects.length === 0 || objects.length > MAX_DELETE_KEYS) throw S3Errors.malformedXml();
  const deleted: string[] = [];
  const errors: { Key: string; Code: string; Message: string }[] = [];
  for (const o of objects) {
    const key = textOf(o, "Key");
    if (key === undefined) throw S3Errors.malformedXml();
    const version = textOf(o, "VersionId");
    if (version !== undefined && version !== "null") {
      errors.push({ Key: key, Code: "NotImplemented", Message: "Buckets are not versioned: only VersionId null exists" });
      continue;
    }
    try {
      assertKey(key);
      deleted.push(key);
    } catch (e) {
      const err = fromStoreError(e, { key }) ?? S3Errors.invalidArgument(String(e));
      errors.push({ Key: key, Code: err.code, Message: err.message });
    }
  }
  if (deleted.length > 0) await call.store.delete(call.ref, deleted);
  call.sendXml(200, "DeleteResult", {
    Deleted: quiet ? [] : deleted.map((Key) => ({ Key })),
    Error: errors,
  });
}

/** The conditional headers of a copy's source (x-amz-copy-source-if-*), as a read condition. */
export function copySourceConditions(headers: IncomingHttpHeaders): R2Conditional | undefined {
  const prefix = "x-amz-copy-source-";
  const renamed: Record<string, string | string[] | undefined> = {};
  for (const name of ["if-match", "if-none-match", "if-modified-since", "if-unmodified-since"]) renamed[name] = headers[prefix + name];
  return conditionalFromHeaders(renamed);
}
