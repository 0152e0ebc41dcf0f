import { randomUUID } from "node:crypto";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { ok } from "../../core/http/envelope.js";
import { DATASET, parseKeys, parseQuery, parseValues } from "./query.js";
import type { LogEvent, LogsStore } from "./store.js";

export interface LogsRouteDeps {
  store: LogsStore;
  retentionMs: number;
}

type Params = { account_id: string };

/** An event as the hosted query API answers it (`$metadata`, `$workers`, `source`, `dataset`, `timestamp`). */
function eventView(e: LogEvent) {
  return {
    $metadata: {
      id: e.id,
      account: e.accountId,
      cloudService: "workers",
      service: e.script,
      requestId: e.requestId,
      type: e.type,
      level: e.level,
      message: e.message,
      ...(e.error !== undefined && { error: e.error }),
      trigger: e.trigger,
      origin: e.origin,
      ...(e.url !== undefined && { url: e.url }),
      ...(e.statusCode !== undefined && { statusCode: e.statusCode }),
      ...(e.duration !== undefined && { duration: e.duration }),
    },
    $workers: e.body.workers,
    dataset: DATASET,
    source: e.body.source,
    timestamp: e.timestamp,
  };
}

/**
 * The Workers Logs query API, at the hosted paths (`POST /accounts/{a}/workers/observability/telemetry/query`,
 * `…/keys`, `…/values`): an account's kept events, newest first, or grouped by invocation. Reading logs is reading
 * the account's Workers: `workers_read`. What is not built (calculations, traces, regular expressions…) is refused
 * with a 400 naming it (query.ts).
 */
export function registerLogsRoutes(app: FastifyInstance, deps: LogsRouteDeps): void {
  const base = "/accounts/:account_id/workers/observability/telemetry";
  const read = { config: { permission: "workers_read" } } as const;

  app.post(`${base}/query`, read, async (req: FastifyRequest) => {
    const { account_id } = req.params as Params;
    const parsed = parseQuery(req.body);
    const started = process.hrtime.bigint();
    const now = new Date().toISOString();
    let result: Record<string, unknown>;
    let rows: number;
    if (parsed.view === "events") {
      const { events, count } = await deps.store.events(account_id, parsed.query);
      rows = events.length;
      const views = events.map(eventView);
      const fields = new Map<string, string>();
      for (const v of views) for (const [k, value] of Object.entries(v.$metadata)) fields.set(`$metadata.${k}`, typeof value);
      result = { events: { events: views, count, fields: [...fields].map(([key, type]) => ({ key, type })) } };
    } else {
      const events = await deps.store.invocations(account_id, parsed.query);
      rows = events.length;
      const grouped = new Map<string, ReturnType<typeof eventView>[]>();
      for (const e of events) {
        const list = grouped.get(e.requestId) ?? [];
        list.push(eventView(e));
        grouped.set(e.requestId, list);
      }
      result = { invocations: Object.fromEntries(grouped) };
    }
    const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
    const statistics = { elapsed, rows_read: rows, bytes_read: 0 };
    const b = parsed.body;
    return ok({
      run: {
        id: randomUUID(),
        accountId: account_id,
        dry: b.dry ?? false,
        granularity: b.granularity ?? 0,
        query: {
          id: b.queryId,
          adhoc: true,
          created: now,
          createdBy: req.principal.userId,
          description: null,
          name: "",
          parameters: b.parameters,
          updated: now,
          updatedBy: req.principal.userId,
        },
        status: "COMPLETED",
        timeframe: b.timeframe,
        userId: req.principal.userId,
        created: now,
        updated: now,
        statistics,
      },
      statistics,
      ...result,
    });
  });

  app.post(`${base}/keys`, read, async (req) => {
    const { account_id } = req.params as Params;
    const { query, limit, keyNeedle } = parseKeys(req.body, Date.now(), deps.retentionMs);
    let keys = await deps.store.keys(account_id, query);
    if (keyNeedle) {
      const wanted = keyNeedle.matchCase ? String(keyNeedle.value) : String(keyNeedle.value).toLowerCase();
      keys = keys.filter((k) => (keyNeedle.matchCase ? k.key : k.key.toLowerCase()).includes(wanted));
    }
    return ok(keys.slice(0, limit));
  });

  app.post(`${base}/values`, read, async (req) => {
    const { account_id } = req.params as Params;
    const { query, key, type } = parseValues(req.body);
    const values = await deps.store.values(account_id, query);
    return ok(values.map((value) => ({ key, type, value: type === "number" ? Number(value) : String(value), dataset: DATASET })));
  });
}
