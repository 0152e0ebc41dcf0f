import type { IncomingMessage, ServerResponse } from "node:http";
import type { OperationMetrics, TrackedOperation } from "../core/metrics/operations.js";
import type { Readable } from "node:stream";
import { EdgeError } from "../core/errors.js";
import { asciiJson, jsonReply, sendBindingError, type BindingErrorFormat } from "../core/errors/render.js";
import { MAX_JSON_DEPTH, parseUserJson } from "../core/http/json-input.js";
import type { Logger } from "../core/logger.js";
import { R2Errors } from "./errors.js";
import { answersWhole } from "./objects/body-policy.js";
import { parseRangeHeader } from "./objects/ranges.js";
import { BINDING_ACTIONS, whenOperationEnds, type R2Operation } from "./operations-dataset.js";
import type { BucketRef, R2Conditional, R2EtagCondition, R2HttpMetadata, R2Include, R2ObjectInfo, R2Range, R2Store } from "./store.js";

/** Serves one workerd R2 binding request for the bucket the caller (the Workers runtime) injected. */
export type R2BindingHandler = (bucket: BucketRef, req: IncomingMessage, res: ServerResponse) => void;

/**
 * The backend of workerd's R2 binding, speaking the protocol workerd's R2 client speaks: head/get/list arrive as
 * `GET /` with the operation JSON in the `cf-r2-request` header; writes arrive as `PUT /` whose body
 * starts with `cf-r2-metadata-size` bytes of operation JSON, followed directly by the payload.
 * The caller has already resolved which bucket the request may touch (from a header it injected).
 */
export function createR2BindingHandler(
  store: R2Store,
  log?: Logger,
  metrics?: OperationMetrics,
  onOperation?: () => ((e: R2Operation) => void) | undefined,
): R2BindingHandler {
  return (bucket, req, res) => {
    const tracked = metrics?.track("other", "binding", req, res) ?? { op: "" };
    const seen: Seen = { action: "", objectSize: 0 };
    const listener = onOperation?.();
    if (listener)
      whenOperationEnds(
        res,
        () => (seen.action ? { accountId: bucket.accountId, bucketName: bucket.bucketName, actionType: seen.action, objectSize: seen.objectSize } : undefined),
        listener,
      );
    serve(store, bucket, req, res, tracked, seen).catch((err: unknown) => {
      sendBindingError(res, err, R2_BINDING_ERRORS, log, { what: "r2 binding request", bucket: bucket.bucketName });
      if (!req.readableEnded) req.resume();
    });
  };
}

/** What workerd's R2 client turns into the script's exception: the code and message of a refusal. */
const r2Error = (err: EdgeError) => ({ version: 1, v4code: err.errors[0]?.code, message: err.message });
/** The `cf-r2-error` header value for `err` (ASCII-safe); R2 also sends it beside metadata (a 412 carries the object). */
const r2ErrorHeader = (err: EdgeError): string => asciiJson(r2Error(err));

/**
 * How workerd's R2 binding reads a failed call: the status, `cf-r2-error: {"version":1,"v4code":<code>,"message":...}`
 * and the same JSON as the body. A bug is R2's own internal refusal, since workerd reads an R2 error's code.
 */
export const R2_BINDING_ERRORS: BindingErrorFormat = {
  refusal: (err) => jsonReply(err.status, r2Error(err), { "cf-r2-error": r2ErrorHeader(err) }),
  bug: () => R2_BINDING_ERRORS.refusal(R2Errors.internal()),
};

type Json = Record<string, unknown>;

/** What a call turned out to be, for r2OperationsAdaptiveGroups: its hosted action name and the size of the object it answered with. */
interface Seen {
  action: string;
  objectSize: number;
}

async function serve(store: R2Store, bucket: BucketRef, req: IncomingMessage, res: ServerResponse, tracked: TrackedOperation, seen: Seen): Promise<void> {
  if (req.method === "GET") {
    req.resume();
    const header = req.headers["cf-r2-request"];
    if (typeof header !== "string") throw invalid("the cf-r2-request header is missing");
    // workerd sends raw UTF-8 bytes in the header; Node hands them over as latin1.
    const op = parseOp(Buffer.from(header, "latin1"));
    tracked.op = String(op.method);
    seen.action = BINDING_ACTIONS[String(op.method)] ?? "";
    switch (op.method) {
      case "head": {
        const obj = await store.head(bucket, str(op.object, "object"));
        if (!obj) throw R2Errors.objectNotFound();
        seen.objectSize = obj.size;
        return sendMetadata(res, 200, wireObject(obj));
      }
      case "get":
        return get(store, bucket, op, res, seen);
      case "list":
        return list(store, bucket, op, res);
      default:
        throw invalid(`unknown GET operation ${JSON.stringify(op.method)}`);
    }
  }
  if (req.method !== "PUT") throw R2Errors.methodNotAllowed(req.method);

  const metaSize = Number(req.headers["cf-r2-metadata-size"]);
  if (!Number.isSafeInteger(metaSize) || metaSize <= 0 || metaSize > 1024 * 1024) throw invalid("the cf-r2-metadata-size header is missing or invalid");
  const op = parseOp(await readExactly(req, metaSize));
  tracked.op = String(op.method);
  seen.action = BINDING_ACTIONS[String(op.method)] ?? "";
  const total = req.headers["content-length"] !== undefined ? Number(req.headers["content-length"]) : undefined;
  const payloadSize = total !== undefined && Number.isSafeInteger(total) ? total - metaSize : undefined;
  const object = () => str(op.object, "object");
  switch (op.method) {
    case "put": {
      const info = await store.put(bucket, object(), req, {
        httpMetadata: httpFields(op.httpFields),
        customMetadata: customFields(op.customFields),
        onlyIf: conditional(op.onlyIf),
        md5: op.md5 === undefined ? undefined : Buffer.from(str(op.md5, "md5"), "base64").toString("hex"),
        sha1: optStr(op.sha1, "sha1"),
        sha256: optStr(op.sha256, "sha256"),
        sha384: optStr(op.sha384, "sha384"),
        sha512: optStr(op.sha512, "sha512"),
        storageClass: optStr(op.storageClass, "storageClass"),
        size: payloadSize,
      });
      if (!info) throw R2Errors.preconditionFailed();
      return sendJson(res, wireObject(info));
    }
    case "delete": {
      req.resume();
      const keys = op.objects !== undefined ? strArray(op.objects, "objects") : object();
      await store.delete(bucket, keys);
      return sendEmpty(res);
    }
    case "createMultipartUpload": {
      req.resume();
      const uploadId = await store.createMultipartUpload(bucket, object(), {
        httpMetadata: httpFields(op.httpFields),
        customMetadata: customFields(op.customFields),
        storageClass: optStr(op.storageClass, "storageClass"),
      });
      return sendJson(res, { uploadId });
    }
    case "uploadPart": {
      const part = await store.uploadPart(bucket, object(), str(op.uploadId, "uploadId"), num(op.partNumber, "partNumber"), req, payloadSize);
      return sendJson(res, { etag: part.etag });
    }
    case "completeMultipartUpload": {
      req.resume();
      if (!Array.isArray(op.parts)) throw invalid("parts must be an array");
      const parts = (op.parts as Json[]).map((p) => ({ partNumber: num(p?.part, "parts.part"), etag: str(p?.etag, "parts.etag") }));
      const info = await store.completeMultipartUpload(bucket, object(), str(op.uploadId, "uploadId"), parts);
      return sendJson(res, wireObject(info));
    }
    case "abortMultipartUpload":
      req.resume();
      await store.abortMultipartUpload(bucket, object(), str(op.uploadId, "uploadId"));
      return sendEmpty(res);
    default:
      throw invalid(`unknown PUT operation ${JSON.stringify(op.method)}`);
  }
}

async function get(store: R2Store, bucket: BucketRef, op: Json, res: ServerResponse, seen: Seen): Promise<void> {
  let range: R2Range | undefined;
  if (op.range !== undefined && op.range !== null) {
    const r = op.range as Json;
    range =
      r.suffix !== undefined
        ? { suffix: num(r.suffix, "range.suffix") }
        : { offset: num(r.offset ?? 0, "range.offset"), length: r.length === undefined ? undefined : num(r.length, "range.length") };
  } else if (op.rangeHeader !== undefined) {
    range = parseRangeHeader(str(op.rangeHeader, "rangeHeader"));
  }
  const result = await store.get(bucket, str(op.object, "object"), { range, onlyIf: conditional(op.onlyIf) });
  if (!result) throw R2Errors.objectNotFound();
  if ("preconditionFailed" in result) {
    // workerd hands the script a body-less object when the metadata comes with the 412.
    return sendMetadata(res, 412, wireObject(result.object), undefined, R2Errors.preconditionFailed());
  }
  seen.objectSize = result.range.length;
  if (result.bytes || answersWhole(result.range.length)) {
    let bytes = result.bytes;
    if (!bytes) {
      const chunks: Buffer[] = [];
      for await (const c of result.body) chunks.push(c as Buffer);
      bytes = Buffer.concat(chunks);
    }
    return sendMetadata(res, 200, wireObject(result.object, result.range), bytes);
  }
  sendMetadata(res, 200, wireObject(result.object, result.range), { stream: result.body, length: result.range.length });
}

async function list(store: R2Store, bucket: BucketRef, op: Json, res: ServerResponse): Promise<void> {
  const include: R2Include[] = [];
  if (op.include !== undefined) {
    if (!Array.isArray(op.include)) throw invalid("include must be an array");
    for (const i of op.include) {
      const n = Number(i);
      if (n === 0) include.push("httpMetadata");
      else if (n === 1) include.push("customMetadata");
      else throw invalid(`unknown include value ${JSON.stringify(i)}`);
    }
  }
  const result = await store.list(bucket, {
    limit: op.limit === undefined ? undefined : num(op.limit, "limit"),
    prefix: optStr(op.prefix, "prefix"),
    cursor: optStr(op.cursor, "cursor") || undefined,
    delimiter: optStr(op.delimiter, "delimiter"),
    startAfter: optStr(op.startAfter, "startAfter"),
    include,
  });
  const body: Json = {
    objects: result.objects.map((o) => wireObject(o, undefined, { http: include.includes("httpMetadata"), custom: include.includes("customMetadata") })),
    truncated: result.truncated,
    delimitedPrefixes: result.delimitedPrefixes,
  };
  if (result.cursor) body.cursor = result.cursor;
  sendMetadata(res, 200, body);
}

// ---- wire formats ----

const CHECKSUM_SLOTS = { md5: "0", sha1: "1", sha256: "2", sha384: "3", sha512: "4" } as const;

function wireObject(o: R2ObjectInfo, range?: { offset: number; length: number }, fields = { http: true, custom: true }): Json {
  const out: Json = { name: o.key, version: o.version, size: o.size, etag: o.etag, uploaded: o.uploaded, storageClass: o.storageClass };
  if (fields.http) out.httpFields = o.httpMetadata;
  if (fields.custom) out.customFields = Object.entries(o.customMetadata).map(([k, v]) => ({ k, v }));
  if (range) out.range = range;
  const checksums: Record<string, string> = {};
  for (const [alg, slot] of Object.entries(CHECKSUM_SLOTS)) {
    const v = o.checksums[alg as keyof typeof CHECKSUM_SLOTS];
    if (v) checksums[slot] = v;
  }
  out.checksums = checksums;
  return out;
}

function httpFields(v: unknown): R2HttpMetadata | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "object") throw invalid("httpFields must be an object");
  // The store checks each field; cacheExpiry arrives as a string of ms and is converted there.
  return v as R2HttpMetadata;
}

function customFields(v: unknown): Record<string, string> | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) throw invalid("customFields must be an array");
  // Keyed by the script's names: __proto__ or constructor is a metadata key like any other.
  const out: Record<string, string> = Object.create(null);
  for (const f of v as Json[]) out[str(f?.k, "customFields.k")] = str(f?.v, "customFields.v");
  return out;
}

function conditional(v: unknown): R2Conditional | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "object") throw invalid("onlyIf must be an object");
  const c = v as Json;
  const etags = (list: unknown, name: string): R2EtagCondition[] | undefined => {
    if (list === undefined) return undefined;
    if (!Array.isArray(list)) throw invalid(`onlyIf.${name} must be an array`);
    return (list as Json[]).map((e) => {
      if (e?.type === "wildcard") return { type: "wildcard" };
      if (e?.type !== "strong" && e?.type !== "weak") throw invalid(`onlyIf.${name}: unknown etag type`);
      return { type: e.type, value: str(e.value, `onlyIf.${name}.value`) };
    });
  };
  const cond: R2Conditional = {
    etagMatches: etags(c.etagMatches, "etagMatches"),
    etagDoesNotMatch: etags(c.etagDoesNotMatch, "etagDoesNotMatch"),
    uploadedBefore: c.uploadedBefore === undefined ? undefined : num(c.uploadedBefore, "onlyIf.uploadedBefore"),
    uploadedAfter: c.uploadedAfter === undefined ? undefined : num(c.uploadedAfter, "onlyIf.uploadedAfter"),
    secondsGranularity: c.secondsGranularity === true,
  };
  return cond;
}

// ---- request parsing ----

function parseOp(bytes: Buffer): Json & { method?: unknown } {
  let op: unknown;
  try {
    op = parseUserJson(bytes, MAX_JSON_DEPTH, "keep");
  } catch (e) {
    throw invalid(`the operation is not valid JSON: ${(e as Error).message}`);
  }
  if (!op || typeof op !== "object" || Array.isArray(op)) throw invalid("the operation must be a JSON object");
  return op as Json;
}

const invalid = R2Errors.malformedCall;

function str(v: unknown, name: string): string {
  if (typeof v !== "string") throw invalid(`${name} must be a string`);
  return v;
}
const optStr = (v: unknown, name: string) => (v === undefined || v === null ? undefined : str(v, name));
const strArray = (v: unknown, name: string) => {
  if (!Array.isArray(v)) throw invalid(`${name} must be an array`);
  return v.map((s) => str(s, name));
};
/** 64-bit numbers arrive as strings; smaller ones as numbers. */
function num(v: unknown, name: string): number {
  const n = typeof v === "string" && v.trim() !== "" ? Number(v) : v;
  if (typeof n !== "number" || !Number.isSafeInteger(n)) throw invalid(`${name} must be an integer`);
  return n;
}

/** Reads exactly `n` bytes from the front of a stream and leaves the rest unread for the payload. */
function readExactly(stream: Readable, n: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const done = (err?: Error, buf?: Buffer) => {
      stream.off("readable", onReadable);
      stream.off("end", onEnd);
      stream.off("error", onError);
      if (err) reject(err);
      else resolve(buf!);
    };
    const onReadable = () => {
      const buf = stream.read(n) as Buffer | null;
      // At the end of the stream read() returns whatever is left, which may be short.
      if (buf) done(buf.length === n ? undefined : invalid("the body ended inside the operation JSON"), buf);
    };
    const onEnd = () => done(invalid("the body ended inside the operation JSON"));
    const onError = (e: Error) => done(e);
    stream.on("readable", onReadable);
    stream.on("end", onEnd);
    stream.on("error", onError);
  });
}

// ---- responses ----

/** The metadata JSON (its length in cf-r2-metadata-size), then the payload: bytes in hand, or a stream of known length. */
function sendMetadata(res: ServerResponse, status: number, meta: Json, payload?: Buffer | { stream: Readable; length: number }, error?: EdgeError): void {
  const json = Buffer.from(JSON.stringify(meta), "utf8");
  const payloadLength = payload === undefined ? 0 : Buffer.isBuffer(payload) ? payload.length : payload.length;
  const headers: Record<string, string | number> = { "cf-r2-metadata-size": json.length, "content-length": json.length + payloadLength };
  if (error) headers["cf-r2-error"] = r2ErrorHeader(error);
  res.writeHead(status, headers);
  if (payload === undefined || Buffer.isBuffer(payload)) {
    res.end(payload ? Buffer.concat([json, payload]) : json);
    return;
  }
  const body = payload.stream;
  res.write(json);
  body.on("error", () => res.destroy());
  res.on("close", () => body.destroy());
  body.pipe(res);
}

function sendJson(res: ServerResponse, value: unknown): void {
  const json = Buffer.from(JSON.stringify(value), "utf8");
  res.writeHead(200, { "content-type": "application/json", "content-length": json.length });
  res.end(json);
}

function sendEmpty(res: ServerResponse): void {
  res.writeHead(200, { "content-length": 0 });
  res.end();
}
