import { UNTRUSTED_CONTENT_HEADERS } from "../core/http/untrusted-content.js";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Readable } from "node:stream";
import { z } from "zod";
import { ok } from "../core/http/envelope.js";
import { readBody } from "../core/http/body.js";
import { parseUserJson } from "../core/http/json-input.js";
import { singleQueryValues } from "../core/http/query.js";
import { parseWith } from "../core/http/validate.js";
import { R2Codes, R2Errors } from "./errors.js";
import { HTTP_METADATA_HEADERS, type HttpMetadataField } from "./objects/http-metadata-headers.js";
import { conditionalFromHeaders } from "./objects/preconditions.js";
import { parseRangeHeader } from "./objects/ranges.js";
import type { BucketRef, R2BucketInfo, R2HttpMetadata, R2ObjectInfo, R2Store } from "./store.js";
import type { NotificationQueues } from "./notifications/relay.js";
import { registerNotificationRoutes } from "./notifications/routes.js";
import { registerBucketSettingsRoutes } from "./cors/routes.js";

type Route = { Params: { account_id: string; bucket?: string; "*"?: string }; Querystring: Record<string, string | undefined> };
type Req = FastifyRequest<Route>;

const MAX_JSON_BODY = 64 * 1024;

/** Every bucket is in the default jurisdiction here (others are refused); Terraform's provider reads the field back. */
const bucketJson = (b: R2BucketInfo) => ({
  name: b.name,
  creation_date: b.creationDate,
  location: b.location,
  storage_class: b.storageClass,
  jurisdiction: "default",
});

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

/** Reads a small request body whatever its content type (wrangler sends bucket creation as text/plain). */
async function readJsonBody(raw: Readable): Promise<unknown> {
  const text = (await readBody(raw, MAX_JSON_BODY, R2Errors.requestTooLarge)).toString("utf8");
  try {
    return text ? parseUserJson(text) : {};
  } catch (e) {
    throw R2Errors.requestNotJson((e as Error).message);
  }
}

function httpMetadataFromHeaders(h: Record<string, string | string[] | undefined>): R2HttpMetadata {
  const one = (n: string) => (typeof h[n] === "string" ? (h[n] as string) : undefined);
  const meta: R2HttpMetadata = {};
  for (const [field, header] of Object.entries(HTTP_METADATA_HEADERS) as [HttpMetadataField, string][]) {
    const v = one(header);
    if (v) meta[field] = v;
  }
  const expires = one("expires");
  if (expires) {
    const t = Date.parse(expires);
    if (!Number.isFinite(t)) throw R2Errors.invalidExpires();
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
export function registerR2Routes(app: FastifyInstance, store: R2Store, queues: () => NotificationQueues | undefined = () => undefined): void {
  // Bodies are consumed by the handlers themselves: raw object bytes of any type and size, small JSON for buckets.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", (_req, _payload, done) => done(null, undefined));

  // A jurisdiction promises data residency (EU, FedRAMP) that this platform cannot make: refused, never ignored.
  app.addHook("onRequest", async (req) => {
    const jurisdiction = req.headers["cf-r2-jurisdiction"];
    if (jurisdiction !== undefined && String(jurisdiction).toLowerCase() !== "default") throw R2Errors.jurisdictionUnsupported(String(jurisdiction));
  });

  registerNotificationRoutes(app, store, queues, readJsonBody);
  registerBucketSettingsRoutes(app, store, readJsonBody);

  const base = "/accounts/:account_id/r2/buckets";
  const read = { config: { permission: "r2_read" } } as const;
  const edit = { config: { permission: "r2_edit" } } as const;
  const ref = (req: Req): BucketRef => ({ accountId: req.params.account_id, bucketName: req.params.bucket! });
  const keyOf = (req: Req) => {
    const key = req.params["*"] ?? "";
    if (!key) throw R2Errors.emptyKey();
    return key;
  };
  const bucketOf = async (req: Req) => {
    const bucket = await store.getBucket(req.params.account_id, req.params.bucket!);
    if (!bucket) throw R2Errors.bucketNotFound();
    return bucket;
  };

  app.get<Route>(base, read, async (req) => {
    const q = singleQueryValues(req.query, ["per_page", "cursor", "start_after", "name_contains"], R2Codes.invalidArgument);
    const perPage = q.per_page === undefined ? undefined : Number(q.per_page);
    if (perPage !== undefined && (!Number.isInteger(perPage) || perPage < 1 || perPage > 1000)) throw R2Errors.invalidPerPage();
    const cursor = q.cursor ? Buffer.from(q.cursor, "base64url").toString("utf8") : undefined;
    const startAfter = [q.start_after, cursor].filter(Boolean).sort().pop();
    // Without per_page every bucket is returned, which is what wrangler (which sends no paging) expects.
    const rows = await store.listBuckets(req.params.account_id, {
      nameContains: q.name_contains,
      startAfter,
      limit: perPage === undefined ? undefined : perPage + 1,
    });
    const page = perPage === undefined ? rows : rows.slice(0, perPage);
    const more = perPage !== undefined && rows.length > perPage;
    const info: Record<string, unknown> = { per_page: perPage ?? page.length };
    if (more) info.cursor = Buffer.from(page[page.length - 1].name, "utf8").toString("base64url");
    return ok({ buckets: page.map(bucketJson) }, info);
  });

  app.post<Route>(base, edit, async (req) => {
    const body = parseWith(createBucketBody, await readJsonBody(req.raw), R2Codes.invalidArgument);
    return ok(bucketJson(await store.createBucket(req.params.account_id, body.name, { location: body.locationHint, storageClass: body.storageClass })));
  });

  app.get<Route>(`${base}/:bucket`, read, async (req) => ok(bucketJson(await bucketOf(req))));

  // The hosted API's bucket PATCH takes the new default storage class in a header (the cloudflare SDK's
  // buckets.edit, Terraform's cloudflare_r2_bucket update); there is nothing else to change.
  app.patch<Route>(`${base}/:bucket`, edit, async (req) => {
    const header = req.headers["cf-r2-storage-class"];
    if (typeof header !== "string" || header === "") throw R2Errors.storageClassHeaderRequired();
    return ok(bucketJson(await store.setBucketStorageClass(req.params.account_id, req.params.bucket!, header)));
  });

  app.delete<Route>(`${base}/:bucket`, edit, async (req) => {
    await store.deleteBucket(req.params.account_id, req.params.bucket!);
    return ok({});
  });

  app.get<Route>(`${base}/:bucket/objects`, read, async (req) => {
    const q = singleQueryValues(req.query, ["per_page", "prefix", "delimiter", "cursor", "start_after"], R2Codes.invalidArgument);
    const limit = q.per_page === undefined ? undefined : Number(q.per_page);
    const result = await store.list(ref(req), {
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
  });

  app.get<Route>(`${base}/:bucket/objects/*`, read, async (req, reply) => {
    // A missing bucket is named before anything about the request is (a bad range on it is still a 404); the store's
    // get names it too, so the bucket is looked up on its own only when the request is refused before that.
    const bucketFirst = async (err: unknown) => {
      await bucketOf(req);
      throw err;
    };
    let onlyIf: ReturnType<typeof conditionalFromHeaders>;
    let range: ReturnType<typeof parseRangeHeader>;
    let key: string;
    try {
      onlyIf = conditionalFromHeaders(req.headers);
      range = parseRangeHeader(req.headers.range);
      key = keyOf(req);
    } catch (err) {
      return bucketFirst(err);
    }
    const found = await store.get(ref(req), key, { onlyIf, range }).catch(bucketFirst);
    if (!found) throw R2Errors.objectNotFound();
    const headers = { ...objectHeaders(found.object), ...UNTRUSTED_CONTENT_HEADERS };
    if ("preconditionFailed" in found) {
      // If-None-Match / If-Modified-Since failing on a read means "not modified", the rest is a 412.
      const notModified = onlyIf?.etagDoesNotMatch !== undefined || (onlyIf?.uploadedAfter !== undefined && onlyIf.etagMatches === undefined);
      if (notModified) return reply.code(304).headers(headers).send();
      throw R2Errors.preconditionFailed();
    }
    const r = found.range;
    headers["content-length"] = String(r.length);
    if (range) {
      headers["content-range"] = `bytes ${r.offset}-${r.offset + r.length - 1}/${found.object.size}`;
      reply.code(206);
    }
    return reply.headers(headers).send(found.body);
  });

  app.put<Route>(`${base}/:bucket/objects/*`, edit, async (req) => {
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
    if (!info) throw R2Errors.preconditionFailed();
    return ok(objectJson(info));
  });

  app.delete<Route>(`${base}/:bucket/objects/*`, edit, async (req) => {
    const key = keyOf(req);
    await store.delete(ref(req), key);
    return ok({ key });
  });
}
