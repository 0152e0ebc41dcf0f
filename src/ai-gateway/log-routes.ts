import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import type { Db } from "../core/db/sqlite.js";
import { EdgeError } from "../core/errors.js";
import { requireAccount } from "../core/http/app.js";
import { ok } from "../core/http/envelope.js";
import { readPage, resultInfo } from "../core/http/pagination.js";
import { parseWith } from "../core/http/validate.js";
import { AigCodes } from "./codes.js";
import { gatewayNotFound } from "./gateway-routes.js";
import type { GatewayStore } from "./gateway-store.js";
import { logOrder, logWhere } from "./log-query.js";
import type { LogQueue } from "./log-queue.js";
import { VIEW_COLUMNS, type LogWriter } from "./log-store.js";

const SELECT = `SELECT ${VIEW_COLUMNS.join(", ")} FROM logs`;

type Req = FastifyRequest<{ Params: { account_id: string; id: string; log_id: string }; Querystring: Record<string, string> }>;

const BOOL_COLUMNS = ["success", "cached", "custom_cost", "authenticated"] as const;

/** A stored row as the API shows it. */
function logView(row: Record<string, unknown>) {
  const { metadata, ...rest } = row;
  for (const c of BOOL_COLUMNS) rest[c] = rest[c] === 1;
  return { ...rest, metadata: typeof metadata === "string" ? JSON.parse(metadata) : null };
}

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

/** Logs API: /accounts/{account_id}/ai-gateway/gateways/{id}/logs[...] */
export function registerLogRoutes(app: FastifyInstance, deps: { db: Db; gateways: GatewayStore; queue: LogQueue; writer: LogWriter }): void {
  const { db, gateways, queue, writer } = deps;
  const base = "/accounts/:account_id/ai-gateway/gateways/:id/logs";

  /** Checks access and the gateway, and writes queued logs first so a caller reads its own requests. */
  const open = (req: Req, perm: "ai_gateway_read" | "ai_gateway_edit") => {
    requireAccount(req, req.params.account_id, perm);
    if (!gateways.get(req.params.account_id, req.params.id)) throw gatewayNotFound(req.params.id);
    queue.flush();
  };
  const getRow = (req: Req) => {
    const row = db.prepare(`${SELECT} WHERE account_id = ? AND gateway_id = ? AND id = ?`).get(req.params.account_id, req.params.id, req.params.log_id);
    if (!row) throw new EdgeError(404, AigCodes.notFound, `Not Found: no log "${req.params.log_id}" in gateway "${req.params.id}"`);
    return row as Record<string, unknown>;
  };

  app.get(base, async (req: Req) => {
    open(req, "ai_gateway_read");
    const page = readPage(req.query, { defaultPerPage: 20, maxPerPage: 50, code: AigCodes.validation });
    const where = logWhere(req.params.account_id, req.params.id, req.query);
    const order = logOrder(req.query);
    const rows = db.prepare(`${SELECT} WHERE ${where.sql} ORDER BY ${order} LIMIT ? OFFSET ?`).all(...where.args, page.perPage, page.offset) as Record<
      string,
      unknown
    >[];
    const stats = db
      .prepare(
        `SELECT count(*) AS total_count, min(cost) AS min_cost, max(cost) AS max_cost, min(duration) AS min_duration, max(duration) AS max_duration,
           min(tokens_in) AS min_tokens_in, max(tokens_in) AS max_tokens_in, min(tokens_out) AS min_tokens_out, max(tokens_out) AS max_tokens_out,
           min(coalesce(tokens_in,0)+coalesce(tokens_out,0)) AS min_total_tokens, max(coalesce(tokens_in,0)+coalesce(tokens_out,0)) AS max_total_tokens
         FROM logs WHERE ${where.sql}`,
      )
      .get(...where.args) as Record<string, number | null> & { total_count: number };
    return ok(rows.map(logView), { ...stats, ...resultInfo(page, rows.length, stats.total_count) });
  });

  app.get(`${base}/:log_id`, async (req: Req) => {
    open(req, "ai_gateway_read");
    return ok(logView(getRow(req)));
  });

  const body = (which: "request" | "response") => async (req: Req, reply: FastifyReply) => {
    open(req, "ai_gateway_read");
    const row = getRow(req);
    const stored = db.prepare(`SELECT ${which}_body AS b FROM logs WHERE id = ?`).get(row.id) as { b: Buffer | null } | undefined;
    if (!stored?.b) throw new EdgeError(404, AigCodes.notFound, `Not Found: the ${which} body of log "${row.id}" was not stored`);
    const type = (row[`${which}_content_type`] as string | null) ?? "application/octet-stream";
    return reply.type(type).send(stored.b);
  };
  app.get(`${base}/:log_id/request`, body("request"));
  app.get(`${base}/:log_id/response`, body("response"));

  app.patch(`${base}/:log_id`, async (req: Req) => {
    open(req, "ai_gateway_edit");
    const row = getRow(req);
    const patch = parseWith(patchBody, req.body ?? {}, AigCodes.validation);
    const sets: string[] = [];
    const args: unknown[] = [];
    if (patch.feedback !== undefined) (sets.push("feedback = ?"), args.push(patch.feedback));
    if (patch.score !== undefined) (sets.push("score = ?"), args.push(patch.score));
    if (patch.metadata !== undefined) (sets.push("metadata = ?"), args.push(patch.metadata === null ? null : JSON.stringify(patch.metadata)));
    if (sets.length) db.prepare(`UPDATE logs SET ${sets.join(", ")} WHERE id = ?`).run(...args, row.id);
    return ok({});
  });

  app.delete(base, async (req: Req) => {
    open(req, "ai_gateway_edit");
    const where = logWhere(req.params.account_id, req.params.id, req.query);
    const order = logOrder(req.query);
    // SQLite takes a LIMIT up to 2^63 - 1; a safe integer always fits, and no gateway holds more logs than that.
    const limit = req.query.limit === undefined ? -1 : Number(req.query.limit);
    if (limit !== -1 && (!Number.isSafeInteger(limit) || limit < 1))
      throw new EdgeError(400, AigCodes.validation, `limit: must be a positive integer no larger than ${Number.MAX_SAFE_INTEGER}`, { pointer: "limit" });
    const r = db.prepare(`DELETE FROM logs WHERE seq IN (SELECT seq FROM logs WHERE ${where.sql} ORDER BY ${order} LIMIT ?)`).run(...where.args, limit);
    writer.recount(req.params.account_id, req.params.id);
    return ok({ deleted: r.changes });
  });
}
