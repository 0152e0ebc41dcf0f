import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Readable } from "node:stream";
import { EdgeError } from "../core/errors.js";
import { readBody } from "../core/http/body.js";
import { ok } from "../core/http/envelope.js";
import { parseUserJson } from "../core/http/json-input.js";
import { formParts, registerMultipart } from "../core/http/multipart.js";
import { readPage, resultInfo } from "../core/http/pagination.js";
import { bulkGet } from "./bulk/get.js";
import { jsonArrayElements } from "./bulk/json-array-stream.js";
import { apiOperation } from "../core/metrics/api-operations.js";
import type { OperationMetrics } from "../core/metrics/operations.js";
import { KvCodes, KvErrors } from "./errors.js";
import { KV_LIMITS } from "./limits.js";
import type { KvBulkWriter, KvStore } from "./store.js";
import { numberParam } from "./validation.js";

type Params = { account_id: string; namespace_id: string; key: string };
type Query = Record<string, string | undefined>;

const NS = "/accounts/:account_id/storage/kv/namespaces";
/** Room for the multipart framing and the metadata part around a maximal value. */
const VALUE_BODY_LIMIT = KV_LIMITS.valueBytes + 64 * 1024;
const read = { config: { permission: "kv_read" } } as const;
const edit = { config: { permission: "kv_edit" } } as const;

/**
 * The v4 KV routes. The guard has checked the caller's permission on `account_id` before a handler runs; each
 * handler parses its input, calls the store and answers ok(...). The routes on keys and values are counted as KV
 * operations (`via="api"`) in `metrics`, beside the binding's.
 */
export function registerKvRoutes(app: FastifyInstance, store: KvStore, bulk: KvBulkWriter, metrics?: OperationMetrics): void {
  const counted = (options: typeof read | typeof edit, op: string) => ({ ...options, ...apiOperation(metrics, op) });
  /** The namespace of the request, once it is known to be the account's. */
  const namespaceOf = async (req: FastifyRequest): Promise<string> => {
    const p = req.params as Params;
    if (!(await store.getNamespace(p.account_id, p.namespace_id))) throw KvErrors.namespaceNotFound();
    return p.namespace_id;
  };

  // ---- namespaces ----

  app.get(NS, read, async (req) => {
    const { account_id } = req.params as Params;
    const q = req.query as Query;
    const page = readPage(q, { defaultPerPage: 20, maxPerPage: 1000, code: KvCodes.badRequest });
    const order = choice(q.order, ["id", "title"], "order");
    const direction = choice(q.direction, ["asc", "desc"], "direction");
    const { namespaces, total } = await store.listNamespaces(account_id, { order, direction, offset: page.offset, limit: page.perPage });
    return ok(namespaces, resultInfo(page, namespaces.length, total));
  });

  app.post(NS, edit, async (req) => ok(await store.createNamespace((req.params as Params).account_id, titleOf(req.body))));

  app.get(`${NS}/:namespace_id`, read, async (req) => {
    const { account_id, namespace_id } = req.params as Params;
    const ns = await store.getNamespace(account_id, namespace_id);
    if (!ns) throw KvErrors.namespaceNotFound();
    return ok(ns);
  });

  app.put(`${NS}/:namespace_id`, edit, async (req) => {
    const { account_id, namespace_id } = req.params as Params;
    return ok(await store.renameNamespace(account_id, namespace_id, titleOf(req.body)));
  });

  app.delete(`${NS}/:namespace_id`, edit, async (req) => {
    const { account_id, namespace_id } = req.params as Params;
    await store.deleteNamespace(account_id, namespace_id);
    return ok(null);
  });

  // ---- keys ----

  app.get(`${NS}/:namespace_id/keys`, counted(read, "list"), async (req) => {
    const ns = await namespaceOf(req);
    const q = req.query as Query;
    const limit = q.limit === undefined || q.limit === "" ? undefined : Number(q.limit);
    const page = await store.list(ns, { prefix: q.prefix, cursor: q.cursor || undefined, limit });
    // The hosted API signals the end with an empty cursor; clients loop until they see it.
    return ok(page.keys, { count: page.keys.length, cursor: page.cursor ?? "" });
  });

  app.get(`${NS}/:namespace_id/metadata/:key`, counted(read, "metadata"), async (req) => {
    const ns = await namespaceOf(req);
    const entry = await store.get(ns, (req.params as Params).key);
    if (!entry) throw KvErrors.keyNotFound();
    return ok(entry.metadata);
  });

  app.get(`${NS}/:namespace_id/values/:key`, counted(read, "get"), async (req, reply) => {
    const ns = await namespaceOf(req);
    const entry = await store.get(ns, (req.params as Params).key);
    if (!entry) throw KvErrors.keyNotFound();
    if (entry.expiration !== null) reply.header("expiration", String(entry.expiration));
    return reply.type("application/octet-stream").send(entry.value);
  });

  app.delete(`${NS}/:namespace_id/values/:key`, counted(edit, "delete"), async (req) => {
    const ns = await namespaceOf(req);
    await store.delete(ns, (req.params as Params).key);
    return ok(null);
  });

  // ---- bulk ----

  // Bulk bodies (up to 100 MB) reach the handlers as the request stream and are parsed as they arrive: a bulk write
  // by the bulk writer, a bulk delete's keys here (memory holds the keys, never the body).
  void app.register(async (streamed) => {
    streamed.removeAllContentTypeParsers();
    streamed.addContentTypeParser("application/json", (_req, payload, done) => done(null, payload));
    streamed.put(`${NS}/:namespace_id/bulk`, counted(edit, "bulk_put"), async (req, reply) => {
      const ns = await namespaceOf(req);
      try {
        const count = await bulk.write(ns, req.body as Readable | undefined, declaredLength(req));
        return ok({ successful_key_count: count, unsuccessful_keys: [] });
      } catch (err) {
        if (err instanceof EdgeError && err.status === 429) void reply.header("retry-after", "5");
        throw err;
      }
    });

    const bulkDelete = async (req: FastifyRequest) => {
      const ns = await namespaceOf(req);
      const keys: unknown[] = [];
      let count = 0;
      for await (const key of jsonArrayElements(req.body as Readable | undefined, KV_LIMITS.bulkBodyBytes)) {
        if (++count <= KV_LIMITS.bulkWriteEntries) keys.push(key);
      }
      if (count > KV_LIMITS.bulkWriteEntries) throw KvErrors.tooManyKeysToDelete(count);
      await store.deleteMany(ns, keys as string[]);
      return ok({ successful_key_count: keys.length, unsuccessful_keys: [] });
    };
    streamed.post(`${NS}/:namespace_id/bulk/delete`, counted(edit, "bulk_delete"), bulkDelete);
    streamed.delete(`${NS}/:namespace_id/bulk`, counted(edit, "bulk_delete"), bulkDelete);
  });

  app.post(`${NS}/:namespace_id/bulk/get`, counted(read, "bulk_get"), async (req) => ok({ values: await bulkGet(store, await namespaceOf(req), req.body) }));

  // Value writes take any body as raw bytes (even application/json), or multipart with value + metadata.
  void app.register(async (raw) => {
    raw.removeAllContentTypeParsers();
    raw.addContentTypeParser("*", (req, payload, done) => {
      readBody(payload, KV_LIMITS.valueBytes, KvErrors.bodyTooLarge("value")).then(
        (b) => done(null, b),
        (e: Error) => done(e, undefined),
      );
    });
    await registerMultipart(raw, { fileSize: KV_LIMITS.valueBytes, fieldSize: KV_LIMITS.valueBytes, files: 2, fields: 4 });
    raw.put(`${NS}/:namespace_id/values/:key`, { ...counted(edit, "put"), bodyLimit: VALUE_BODY_LIMIT }, async (req) => {
      const ns = await namespaceOf(req);
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

/** The request's content-length, when it sent one. */
function declaredLength(req: FastifyRequest): number | undefined {
  const header = req.headers["content-length"];
  return header === undefined ? undefined : Number(header);
}

async function readMultipart(req: FastifyRequest): Promise<{ value: Buffer; metadata: unknown }> {
  let value: Buffer | undefined;
  let metadata: unknown;
  for await (const part of formParts(req, KvErrors.multipart)) {
    if (part.field === "value") value = part.content;
    else if (part.field === "metadata" && part.content.length) metadata = parseMetadataPart(part.content);
  }
  if (!value) throw KvErrors.noValuePart();
  return { value, metadata };
}

function parseMetadataPart(data: Buffer): unknown {
  try {
    return parseUserJson(data);
  } catch (e) {
    throw KvErrors.metadataUnparsable('the "metadata" part', (e as Error).message);
  }
}

function choice<T extends string>(v: string | undefined, allowed: readonly T[], name: string): T | undefined {
  if (v === undefined || v === "") return undefined;
  if (!(allowed as readonly string[]).includes(v)) throw KvErrors.invalidChoice(name, allowed);
  return v as T;
}

function titleOf(body: unknown): string {
  const title = (body as { title?: unknown } | undefined)?.title;
  if (typeof title !== "string" || !title.trim()) throw KvErrors.titleMissing();
  return title;
}
