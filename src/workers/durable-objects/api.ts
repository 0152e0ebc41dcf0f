import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { ok } from "../../core/http/envelope.js";
import { pageOf, readPage } from "../../core/http/pagination.js";
import { parseWith } from "../../core/http/validate.js";
import { WorkersCodes } from "../errors.js";
import type { DurableObjects } from "./durable-objects.js";
import { DurableObjectsErrors } from "./errors.js";
import type { NamespaceRecord } from "./store.js";

type Params = { account_id: string; id: string };

const read = { config: { permission: "workers_read" } } as const;

/** The hosted API's bounds on a page of objects. */
const objectsQuery = z.object({
  limit: z.coerce.number().int().min(10).max(10_000).default(1000),
  cursor: z
    .string()
    .regex(/^[0-9a-f]{64}$/, { message: "must be a cursor from an earlier answer" })
    .optional(),
});

/** A namespace as the v4 API shows it (never its uniqueKey). */
const view = (n: NamespaceRecord) => ({ id: n.id, name: `${n.script}_${n.className}`, script: n.script, class: n.className, use_sqlite: n.useSqlite });

/** `GET .../workers/durable_objects/namespaces` and `.../namespaces/{id}/objects`, in the account of the path only. */
export function registerDurableObjectRoutes(app: FastifyInstance, objects: DurableObjects): void {
  const base = "/accounts/:account_id/workers/durable_objects/namespaces";
  app.get(base, read, async (req) => {
    const p = req.params as Params;
    const page = readPage(req.query as Record<string, unknown>, { defaultPerPage: 20, maxPerPage: 1000, code: WorkersCodes.validation });
    const { result, result_info } = pageOf((await objects.list(p.account_id)).map(view), page);
    return ok(result, result_info);
  });
  app.get(`${base}/:id/objects`, read, async (req) => {
    const p = req.params as Params;
    const ns = await objects.get(p.account_id, p.id);
    if (!ns) throw DurableObjectsErrors.namespaceNotFound();
    const q = parseWith(objectsQuery, req.query ?? {}, WorkersCodes.validation);
    const { ids, more } = objects.objects(ns, q.cursor, q.limit);
    return ok(
      ids.map((id) => ({ id, hasStoredData: true })),
      { count: ids.length, cursor: more ? ids[ids.length - 1] : "" },
    );
  });
}
