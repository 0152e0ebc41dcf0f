import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import { ok } from "../../core/http/envelope.js";
import { readPage, resultInfo } from "../../core/http/pagination.js";
import { parseWith } from "../../core/http/validate.js";
import { AigCodes, AigErrors } from "../errors.js";
import type { GatewayDirectory } from "../gateways/directory.js";
import type { LogStore } from "./store.js";
import type { LogCounts } from "./counts.js";
import type { LogQueue } from "./queue.js";
import { readDeleteLimit, readLogFilter, readLogOrder } from "./query.js";

type Req = FastifyRequest<{ Params: { account_id: string; id: string; log_id: string }; Querystring: Record<string, string> }>;

const patchBody = z.object({
  feedback: z
    .union([z.literal(-1), z.literal(0), z.literal(1)])
    .nullable()
    .optional(),
  score: z.number().min(0).max(100).nullable().optional(),
  metadata: z
    .record(z.string(), z.union([z.string(), z.number(), z.boolean()]))
    .nullable()
    .optional(),
});

interface LogRouteDeps {
  gateways: GatewayDirectory;
  logs: LogStore;
  queue: LogQueue;
  counts: LogCounts;
}

const read = { config: { permission: "ai_gateway_read" } } as const;
const edit = { config: { permission: "ai_gateway_edit" } } as const;

/** Logs API: /accounts/{account_id}/ai-gateway/gateways/{id}/logs[...] */
export function registerLogRoutes(app: FastifyInstance, { gateways, logs, queue, counts }: LogRouteDeps): void {
  const base = "/accounts/:account_id/ai-gateway/gateways/:id/logs";

  /** Checks the gateway, and writes queued logs first so a caller reads its own requests. */
  const open = async (req: Req) => {
    if (!(await gateways.get(req.params.account_id, req.params.id))) throw AigErrors.gatewayNotFound(req.params.id);
    await queue.flush();
  };

  app.get(base, read, async (req: Req) => {
    await open(req);
    const page = readPage(req.query, { defaultPerPage: 20, maxPerPage: 50, code: AigCodes.validation });
    const query = { filter: readLogFilter(req.query), order: readLogOrder(req.query), limit: page.perPage, offset: page.offset };
    const { logs: found, stats } = await logs.list(req.params.account_id, req.params.id, query);
    return ok(found, { ...stats, ...resultInfo(page, found.length, stats.total_count) });
  });

  app.get(`${base}/:log_id`, read, async (req: Req) => {
    await open(req);
    const log = await logs.get(req.params.account_id, req.params.id, req.params.log_id);
    if (!log) throw AigErrors.logNotFound(req.params.log_id, req.params.id);
    return ok(log);
  });

  const body = (which: "request" | "response") => async (req: Req, reply: FastifyReply) => {
    await open(req);
    const stored = await logs.body(req.params.account_id, req.params.id, req.params.log_id, which);
    if (!stored) throw AigErrors.logNotFound(req.params.log_id, req.params.id);
    if (!stored.body) throw AigErrors.logBodyNotStored(which, req.params.log_id);
    return reply.type(stored.contentType ?? "application/octet-stream").send(stored.body);
  };
  app.get(`${base}/:log_id/request`, read, body("request"));
  app.get(`${base}/:log_id/response`, read, body("response"));

  app.patch(`${base}/:log_id`, edit, async (req: Req) => {
    await open(req);
    const patch = parseWith(patchBody, req.body ?? {}, AigCodes.validation);
    if (!(await logs.patch(req.params.account_id, req.params.id, req.params.log_id, patch))) throw AigErrors.logNotFound(req.params.log_id, req.params.id);
    return ok({});
  });

  app.delete(base, edit, async (req: Req) => {
    await open(req);
    const query = { filter: readLogFilter(req.query), order: readLogOrder(req.query), limit: readDeleteLimit(req.query) };
    const deleted = await logs.delete(req.params.account_id, req.params.id, query);
    counts.forget(req.params.account_id, req.params.id);
    return ok({ deleted });
  });
}
