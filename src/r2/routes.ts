import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Readable } from "node:stream";
import { z } from "zod";
import { EdgeError } from "../core/errors.js";
import { requireAccount } from "../core/http/app.js";
import { ok } from "../core/http/envelope.js";
import { readBody } from "../core/http/body.js";
import { parseWith } from "../core/http/validate.js";
import { conditionalFromHeaders } from "./preconditions.js";
import { parseRangeHeader } from "./ranges.js";
import { R2Codes, R2Error, type BucketRef, type R2BucketInfo, type R2HttpMetadata, type R2ObjectInfo, type R2Store } from "./store.js";
import { parseUserJson } from "../core/http/json-input.js";
import { singleQueryValues } from "../core/http/query.js";

type Params = { accountId: string; bucket?: string; "*"?: string };
type Req = FastifyRequest<{ Params: Params; Querystring: Record<string, string | undefined> }>;

const MAX_JSON_BODY = 64 * 1024;

const bucketJson = (b: R2BucketInfo) => ({ name: b.name, creation_date: b.creationDate, location: b.location, storage_class: b.storageClass });

const objectJson = (o: R2ObjectInfo) => ({
  key: o.key,
  version: o.version,
  size: o.size,
  etag: o.etag,
  uploaded: new Date(o.uploaded).toISOString(),
  http_metadata: o.httpMetadata,
  custom_metadata: o.customMetadata,
  storage_class: o.storageClass,
});

const createBucketBody = z.object({
  name: z.string(),
  locationHint: z.string().optional(),
  storageClass: z.string().optional(),
});

/** Store refusals become v4 errors with the same status and code. */
function wrap<R>(handler: (req: Req, reply: FastifyReply) => Promise<R> | R) {
  return async (req: Req, reply: FastifyReply) => {
    try {
      return await handler(req, reply);
    } catch (e) {
      if (e instanceof R2Error) throw new EdgeError(e.status, e.v4code, e.message);
      throw e;
    }
  };
}

/** Reads a small request body whatever its content type (wrangler sends bucket creation as text/plain). */
async function readJsonBody(raw: Readable): Promise<unknown> {
  const text = (await readBody(raw, MAX_JSON_BODY, () => new EdgeError(413, R2Codes.invalidArgument, "The request body is too large"))).toString("utf8");
  try {
    return text ? parseUserJson(text) : {};
  } catch (e) {
    throw new EdgeError(400, R2Codes.invalidArgument, `The request body is not valid JSON: ${(e as Error).message}`);
  }
}

function httpMetadataFromHeaders(h: Record<string, string | string[] | undefined>): R2HttpMetadata {
  const one = (n: string) => (typeof h[n] === "string" ? (h[n] as string) : undefined);
  const meta: R2HttpMetadata = {};
  const map = {
    contentType: "content-type",
    contentLanguage: "content-language",
    contentDisposition: "content-disposition",
    contentEncoding: "content-encoding",
    cacheControl: "cache-control",
  } as const;
  for (const [field, header] of Object.entries(map)) {
    const v = one(header);
    if (v) meta[field as keyof typeof map] = v;
  }
  const expires = one("expires");
  if (expires) {
    const t = Date.parse(expires);
    if (!Number.isFinite(t)) throw new EdgeError(400, R2Codes.invalidArgument, "The Expires header is not a valid HTTP date");
    meta.cacheExpiry = t;
  }
  return meta;
}

function objectHeaders(o: R2ObjectInfo): Record<string, string> {
  const h: Record<string, string> = { etag: `"${o.etag}"`, "last-modified": new Date(o.uploaded).toUTCString(), "accept-ranges": "bytes" };
  const m = o.httpMetadata;
  h["content-type"] = m.contentType ?? "application/octet-stream";
  if (m.contentLanguage) h["content-language"] = m.contentLanguage;
  if (m.contentDisposition) h["content-disposition"] = m.contentDisposition;
  // Stored as metadata only: the API hands back the exact bytes, so a client must not decode them again.
  if (m.contentEncoding) h["x-r2-content-encoding"] = m.contentEncoding;
  if (m.cacheControl) h["cache-control"] = m.cacheControl;
  if (m.cacheExpiry !== undefined) h.expires = new Date(m.cacheExpiry).toUTCString();
  return h;
}

/** The v4 API for buckets and objects. Object bodies stream in both directions, never buffered whole. */
export function registerR2Routes(app: FastifyInstance, store: R2Store): void {
  // Bodies are consumed by the handlers themselves: raw object bytes of any type and size, small JSON for buckets.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", (_req, _payload, done) => done(null, undefined));

  const base = "/accounts/:accountId/r2/buckets";
  const ref = (req: Req): BucketRef => ({ accountId: req.params.accountId, bucketName: req.params.bucket! });
  const keyOf = (req: Req) => {
    const key = req.params["*"] ?? "";
    if (!key) throw new EdgeError(400, R2Codes.invalidObjectName, "The object key must not be empty");
    return key;
  };
  const requireBucket = (req: Req) => {
    if (!store.getBucket(req.params.accountId, req.params.bucket!)) throw new EdgeError(404, R2Codes.bucketNotFound, "The specified bucket does not exist.");
  };

  app.get(
    base,
    wrap((req) => {
      requireAccount(req, req.params.accountId, "r2_read");
      const q = singleQueryValues(req.query, ["per_page", "cursor", "start_after", "name_contains"], R2Codes.invalidArgument);
      const perPage = q.per_page === undefined ? undefined : Number(q.per_page);
      if (perPage !== undefined && (!Number.isInteger(perPage) || perPage < 1 || perPage > 1000)) {
        throw new EdgeError(400, R2Codes.invalidArgument, "per_page must be an integer between 1 and 1000");
      }
      const cursor = q.cursor ? Buffer.from(q.cursor, "base64url").toString("utf8") : undefined;
      const startAfter = [q.start_after, cursor].filter(Boolean).sort().pop();
      // Without per_page every bucket is returned, which is what wrangler (which sends no paging) expects.
      const rows = store.listBuckets(req.params.accountId, {
        nameContains: q.name_contains,
        startAfter,
        limit: perPage === undefined ? undefined : perPage + 1,
      });
      const page = perPage === undefined ? rows : rows.slice(0, perPage);
      const more = perPage !== undefined && rows.length > perPage;
      const info: Record<string, unknown> = { per_page: perPage ?? page.length };
      if (more) info.cursor = Buffer.from(page[page.length - 1].name, "utf8").toString("base64url");
      return ok({ buckets: page.map(bucketJson) }, info);
    }),
  );

  app.post(
    base,
    wrap(async (req) => {
      requireAccount(req, req.params.accountId, "r2_edit");
      const body = parseWith(createBucketBody, await readJsonBody(req.raw), R2Codes.invalidArgument);
      return ok(bucketJson(store.createBucket(req.params.accountId, body.name, { location: body.locationHint, storageClass: body.storageClass })));
    }),
  );

  app.get(
    `${base}/:bucket`,
    wrap((req) => {
      requireAccount(req, req.params.accountId, "r2_read");
      const b = store.getBucket(req.params.accountId, req.params.bucket!);
      if (!b) throw new EdgeError(404, R2Codes.bucketNotFound, "The specified bucket does not exist.");
      return ok(bucketJson(b));
    }),
  );

  app.delete(
    `${base}/:bucket`,
    wrap((req) => {
      requireAccount(req, req.params.accountId, "r2_edit");
      store.deleteBucket(req.params.accountId, req.params.bucket!);
      return ok({});
    }),
  );

  app.get(
    `${base}/:bucket/objects`,
    wrap((req) => {
      requireAccount(req, req.params.accountId, "r2_read");
      const q = singleQueryValues(req.query, ["per_page", "prefix", "delimiter", "cursor", "start_after"], R2Codes.invalidArgument);
      const limit = q.per_page === undefined ? undefined : Number(q.per_page);
      const result = store.list(ref(req), {
        prefix: q.prefix,
        delimiter: q.delimiter,
        cursor: q.cursor || undefined,
        startAfter: q.start_after,
        limit,
        include: ["httpMetadata", "customMetadata"],
      });
      const info: Record<string, unknown> = { is_truncated: result.truncated, delimited: result.delimitedPrefixes, per_page: limit ?? 1000 };
      if (result.cursor) info.cursor = result.cursor;
      return ok(result.objects.map(objectJson), info);
    }),
  );

  app.get(
    `${base}/:bucket/objects/*`,
    wrap((req, reply) => {
      requireAccount(req, req.params.accountId, "r2_read");
      requireBucket(req);
      const onlyIf = conditionalFromHeaders(req.headers);
      const range = parseRangeHeader(req.headers.range);
      const found = store.get(ref(req), keyOf(req), { onlyIf, range });
      if (!found) throw new EdgeError(404, R2Codes.objectNotFound, "The specified key does not exist.");
      const headers = objectHeaders(found.object);
      if ("preconditionFailed" in found) {
        // If-None-Match / If-Modified-Since failing on a read means "not modified", the rest is a 412.
        const notModified = onlyIf?.etagDoesNotMatch !== undefined || (onlyIf?.uploadedAfter !== undefined && onlyIf.etagMatches === undefined);
        if (notModified) return reply.code(304).headers(headers).send();
        throw new EdgeError(412, R2Codes.preconditionFailed, "At least one of the pre-conditions you specified did not hold.");
      }
      const r = found.range;
      headers["content-length"] = String(r.length);
      if (range) {
        headers["content-range"] = `bytes ${r.offset}-${r.offset + r.length - 1}/${found.object.size}`;
        reply.code(206);
      }
      return reply.headers(headers).send(found.body);
    }),
  );

  app.put(
    `${base}/:bucket/objects/*`,
    wrap(async (req) => {
      requireAccount(req, req.params.accountId, "r2_edit");
      const key = keyOf(req);
      const md5 = typeof req.headers["content-md5"] === "string" ? Buffer.from(req.headers["content-md5"], "base64").toString("hex") : undefined;
      const length = req.headers["content-length"] === undefined ? undefined : Number(req.headers["content-length"]);
      const storageClass = typeof req.headers["cf-r2-storage-class"] === "string" ? req.headers["cf-r2-storage-class"] : undefined;
      const info = await store.put(ref(req), key, req.raw, {
        httpMetadata: httpMetadataFromHeaders(req.headers),
        onlyIf: conditionalFromHeaders(req.headers),
        md5,
        storageClass,
        size: Number.isSafeInteger(length) ? length : undefined,
      });
      if (!info) throw new EdgeError(412, R2Codes.preconditionFailed, "At least one of the pre-conditions you specified did not hold.");
      return ok(objectJson(info));
    }),
  );

  app.delete(
    `${base}/:bucket/objects/*`,
    wrap(async (req) => {
      requireAccount(req, req.params.accountId, "r2_edit");
      const key = keyOf(req);
      await store.delete(ref(req), key);
      return ok({ key });
    }),
  );
}
