import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Readable } from "node:stream";
import { EdgeError } from "../core/errors.js";
import { ok } from "../core/http/envelope.js";
import { formParts, registerMultipart } from "../core/http/multipart.js";
import { readPage, resultInfo } from "../core/http/pagination.js";
import { requireAccount } from "../core/http/app.js";
import { readBody } from "../core/http/body.js";
import { bodyTooLarge, KV_LIMITS, KvCodes, numberParam } from "./limits.js";
import { bulkGet } from "./bulk.js";
import { BULK_BODY_LIMIT, type BulkWriter } from "./bulk-writer.js";
import { jsonArrayElements } from "./json-array-stream.js";
import { keyNotFound, namespaceNotFound, type KvStore } from "./store.js";
import { parseUserJson } from "../core/http/json-input.js";

type Params = { accountId: string; namespaceId: string; key: string };
type Query = Record<string, string | undefined>;

const NS = "/accounts/:accountId/storage/kv/namespaces";
/** Room for the multipart framing and the metadata part around a maximal value. */
const VALUE_BODY_LIMIT = KV_LIMITS.valueBytes + 64 * 1024;

export function registerKvRoutes(app: FastifyInstance, store: KvStore, bulk: BulkWriter): void {
  /** Checks the caller's permission and that the namespace is the account's; returns its id. */
  const namespaceOf = (req: FastifyRequest, permission: "kv_read" | "kv_edit"): string => {
    const p = req.params as Params;
    requireAccount(req, p.accountId, permission);
    if (!store.getNamespace(p.accountId, p.namespaceId)) throw namespaceNotFound();
    return p.namespaceId;
  };

  // ---- namespaces ----

  app.get(NS, async (req) => {
    const { accountId } = req.params as Params;
    requireAccount(req, accountId, "kv_read");
    const q = req.query as Query;
    const page = readPage(q, { defaultPerPage: 20, maxPerPage: 1000, code: KvCodes.badRequest });
    const order = choice(q.order, ["id", "title"], "order");
    const direction = choice(q.direction, ["asc", "desc"], "direction");
    const { namespaces, total } = store.listNamespaces(accountId, { order, direction, offset: page.offset, limit: page.perPage });
    return ok(namespaces, resultInfo(page, namespaces.length, total));
  });

  app.post(NS, async (req) => {
    const { accountId } = req.params as Params;
    requireAccount(req, accountId, "kv_edit");
    return ok(await store.createNamespace(accountId, titleOf(req.body)));
  });

  app.get(`${NS}/:namespaceId`, async (req) => {
    const { accountId, namespaceId } = req.params as Params;
    requireAccount(req, accountId, "kv_read");
    const ns = store.getNamespace(accountId, namespaceId);
    if (!ns) throw namespaceNotFound();
    return ok(ns);
  });

  app.put(`${NS}/:namespaceId`, async (req) => {
    const { accountId, namespaceId } = req.params as Params;
    requireAccount(req, accountId, "kv_edit");
    return ok(await store.renameNamespace(accountId, namespaceId, titleOf(req.body)));
  });

  app.delete(`${NS}/:namespaceId`, async (req) => {
    const { accountId, namespaceId } = req.params as Params;
    requireAccount(req, accountId, "kv_edit");
    await store.deleteNamespace(accountId, namespaceId);
    return ok(null);
  });

  // ---- keys ----

  app.get(`${NS}/:namespaceId/keys`, async (req) => {
    const ns = namespaceOf(req, "kv_read");
    const q = req.query as Query;
    const limit = q.limit === undefined || q.limit === "" ? undefined : Number(q.limit);
    const page = store.list(ns, { prefix: q.prefix, cursor: q.cursor || undefined, limit });
    // The hosted API signals the end with an empty cursor; clients loop until they see it.
    return ok(page.keys, { count: page.keys.length, cursor: page.cursor ?? "" });
  });

  app.get(`${NS}/:namespaceId/metadata/:key`, async (req) => {
    const ns = namespaceOf(req, "kv_read");
    const entry = await store.get(ns, (req.params as Params).key);
    if (!entry) throw keyNotFound();
    return ok(entry.metadata);
  });

  app.get(`${NS}/:namespaceId/values/:key`, async (req, reply) => {
    const ns = namespaceOf(req, "kv_read");
    const entry = await store.get(ns, (req.params as Params).key);
    if (!entry) throw keyNotFound();
    if (entry.expiration !== null) reply.header("expiration", String(entry.expiration));
    return reply.type("application/octet-stream").send(entry.value);
  });

  app.delete(`${NS}/:namespaceId/values/:key`, async (req) => {
    const ns = namespaceOf(req, "kv_edit");
    await store.delete(ns, (req.params as Params).key);
    return ok(null);
  });

  // ---- bulk ----

  // Bulk bodies (up to 100 MB) reach the handlers as the request stream and are parsed as they arrive: a bulk write
  // by BulkWriter on its thread, a bulk delete's keys here (memory holds the keys, never the body).
  void app.register(async (streamed) => {
    streamed.removeAllContentTypeParsers();
    streamed.addContentTypeParser("application/json", (_req, payload, done) => done(null, payload));
    streamed.put(`${NS}/:namespaceId/bulk`, async (req, reply) => {
      const ns = namespaceOf(req, "kv_edit");
      try {
        const count = await bulk.write(ns, req.body as Readable | undefined);
        return ok({ successful_key_count: count, unsuccessful_keys: [] });
      } catch (err) {
        if (err instanceof EdgeError && err.status === 429) void reply.header("retry-after", "5");
        throw err;
      }
    });

    const bulkDelete = async (req: FastifyRequest) => {
      const ns = namespaceOf(req, "kv_edit");
      const keys: unknown[] = [];
      let count = 0;
      for await (const key of jsonArrayElements(req.body as Readable | undefined, BULK_BODY_LIMIT)) {
        if (++count <= KV_LIMITS.bulkWriteEntries) keys.push(key);
      }
      if (count > KV_LIMITS.bulkWriteEntries) {
        throw new EdgeError(413, KvCodes.tooManyEntries, `a bulk delete holds at most ${KV_LIMITS.bulkWriteEntries} keys, got ${count}`);
      }
      await store.deleteMany(ns, keys as string[]);
      return ok({ successful_key_count: keys.length, unsuccessful_keys: [] });
    };
    streamed.post(`${NS}/:namespaceId/bulk/delete`, bulkDelete);
    streamed.delete(`${NS}/:namespaceId/bulk`, bulkDelete);
  });

  app.post(`${NS}/:namespaceId/bulk/get`, async (req) => {
    const ns = namespaceOf(req, "kv_read");
    return ok({ values: await bulkGet(store, ns, req.body) });
  });

  // Value writes take any body as raw bytes (even application/json), or multipart with value + metadata.
  void app.register(async (raw) => {
    raw.removeAllContentTypeParsers();
    raw.addContentTypeParser("*", (req, payload, done) => {
      readBody(payload, KV_LIMITS.valueBytes, bodyTooLarge("value")).then(
        (b) => done(null, b),
        (e: Error) => done(e, undefined),
      );
    });
    await registerMultipart(raw, { fileSize: KV_LIMITS.valueBytes, fieldSize: KV_LIMITS.valueBytes, files: 2, fields: 4 });
    raw.put(`${NS}/:namespaceId/values/:key`, { bodyLimit: VALUE_BODY_LIMIT }, async (req) => {
      const ns = namespaceOf(req, "kv_edit");
      const q = req.query as Query;
      const { value, metadata } = req.isMultipart()
        ? await readMultipart(req)
        : { value: (req.body as Buffer | undefined) ?? Buffer.alloc(0), metadata: undefined };
      await store.put(ns, (req.params as Params).key, value, {
        expiration: numberParam(q.expiration, "expiration"),
        expirationTtl: numberParam(q.expiration_ttl, "expiration_ttl"),
        metadata,
      });
      return ok(null);
    });
  });
}

const multipartErrors = {
  invalid: (message: string) => new EdgeError(400, KvCodes.badRequest, message),
  tooLarge: (message: string) => new EdgeError(413, KvCodes.valueTooLarge, message),
};

async function readMultipart(req: FastifyRequest): Promise<{ value: Buffer; metadata: unknown }> {
  let value: Buffer | undefined;
  let metadata: unknown;
  for await (const part of formParts(req, multipartErrors)) {
    if (part.field === "value") value = part.content;
    else if (part.field === "metadata" && part.content.length) metadata = parseMetadataPart(part.content);
  }
  if (!value) throw new EdgeError(400, KvCodes.badRequest, 'multipart body has no "value" part');
  return { value, metadata };
}

function parseMetadataPart(data: Buffer): unknown {
  try {
    return parseUserJson(data);
  } catch (e) {
    throw new EdgeError(400, KvCodes.invalidMetadata, `the "metadata" part is not valid JSON: ${(e as Error).message}`);
  }
}

function choice<T extends string>(v: string | undefined, allowed: readonly T[], name: string): T | undefined {
  if (v === undefined || v === "") return undefined;
  if (!(allowed as readonly string[]).includes(v)) throw new EdgeError(400, KvCodes.badRequest, `${name} must be one of ${allowed.join(", ")}`);
  return v as T;
}

function titleOf(body: unknown): string {
  const title = (body as { title?: unknown } | undefined)?.title;
  if (typeof title !== "string" || !title.trim()) throw new EdgeError(400, KvCodes.invalidTitle, "body must be JSON with a non-empty string title");
  return title;
}
