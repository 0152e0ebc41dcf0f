import type { CliContext } from "../../core/cli/context.js";
import { UsageError } from "../../core/errors.js";
import type { Gateway } from "../gateways/store.js";
import type { LogRecord } from "../logs/store.js";

export type Args = Record<string, unknown> & { given: ReadonlySet<string> };

/** Option name → gateway field. */
const FIELDS: Record<string, string> = {
  "cache-ttl": "cache_ttl",
  "cache-invalidate-on-update": "cache_invalidate_on_update",
  "collect-logs": "collect_logs",
  authentication: "authentication",
  "rate-limit": "rate_limiting_limit",
  "rate-limit-interval": "rate_limiting_interval",
  "rate-limit-technique": "rate_limiting_technique",
  "log-limit": "log_management",
  "log-strategy": "log_management_strategy",
  "retry-max-attempts": "retry_max_attempts",
  "retry-delay": "retry_delay",
  "retry-backoff": "retry_backoff",
};

const DEFAULTS = {
  cache_ttl: 0,
  cache_invalidate_on_update: false,
  collect_logs: true,
  rate_limiting_interval: 60,
  rate_limiting_limit: 0,
  rate_limiting_technique: "fixed",
  authentication: false,
};

/** The settings a gateway's PUT needs: everything it has now, with the options the user typed on top. */
function settings(args: Args, current: Record<string, unknown>): Record<string, unknown> {
  const { id: _id, account_id: _a, created_at: _c, modified_at: _m, ...out } = current;
  for (const [opt, field] of Object.entries(FIELDS)) if (args.given.has(opt)) out[field] = args[opt];
  return out;
}

const gatewaysPath = async (ctx: CliContext) => `/accounts/${await ctx.accountId()}/ai-gateway/gateways`;
/** The API path of one gateway of the current account. */
export const gatewayPath = async (ctx: CliContext, id: unknown) => `${await gatewaysPath(ctx)}/${encodeURIComponent(String(id))}`;

function show(ctx: CliContext, args: Args, g: Gateway, verb: string): void {
  if (args.json) return ctx.json(g);
  ctx.log.info(
    `${verb} AI gateway ${g.id}: authentication ${g.authentication ? "on" : "off"}, logs ${g.collect_logs ? "on" : "off"}, cache ttl ${g.cache_ttl}s, rate limit ${g.rate_limiting_limit ? `${g.rate_limiting_limit}/${g.rate_limiting_interval}s ${g.rate_limiting_technique}` : "off"}`,
  );
}

export async function createGateway(args: Args, ctx: CliContext): Promise<void> {
  const body = { id: args.id, ...settings(args, DEFAULTS) };
  show(ctx, args, await ctx.api().fetchResult<Gateway>("POST", await gatewaysPath(ctx), { json: body }), "Created");
}

export async function listGateways(args: Args, ctx: CliContext): Promise<void> {
  const all = await ctx.api().fetchAllPages<Gateway>(await gatewaysPath(ctx), { search: args.search as string | undefined }, 100);
  if (args.json) return ctx.json(all);
  if (!all.length) return ctx.log.info("No AI gateways yet. Create one with `edgecli ai-gateway create <id>`.");
  const w = Math.max(2, ...all.map((g) => g.id.length));
  ctx.write(`${"ID".padEnd(w)}  AUTH  LOGS  CACHE_TTL  RATE_LIMIT      CREATED\n`);
  for (const g of all) {
    const rl = g.rate_limiting_limit ? `${g.rate_limiting_limit}/${g.rate_limiting_interval}s` : "off";
    ctx.write(
      `${g.id.padEnd(w)}  ${(g.authentication ? "on" : "off").padEnd(4)}  ${(g.collect_logs ? "on" : "off").padEnd(4)}  ${String(g.cache_ttl).padEnd(9)}  ${rl.padEnd(14)}  ${g.created_at}\n`,
    );
  }
}

export async function getGateway(args: Args, ctx: CliContext): Promise<void> {
  ctx.json(await ctx.api().fetchResult<Gateway>("GET", await gatewayPath(ctx, args.id)));
}

export async function updateGateway(args: Args, ctx: CliContext): Promise<void> {
  if (!Object.keys(FIELDS).some((o) => args.given.has(o))) throw new UsageError("Nothing to change: give at least one setting, e.g. --authentication");
  const path = await gatewayPath(ctx, args.id);
  const current = await ctx.api().fetchResult<Record<string, unknown>>("GET", path);
  show(ctx, args, await ctx.api().fetchResult<Gateway>("PUT", path, { json: settings(args, current) }), "Updated");
}

export async function deleteGateway(args: Args, ctx: CliContext): Promise<void> {
  const path = await gatewayPath(ctx, args.id);
  const question = `About to delete AI gateway '${String(args.id)}' and all its logs. Ok to proceed?`;
  if (!(await ctx.confirmDestructive(question, { given: args["skip-confirmation"] as boolean | undefined, flag: "--skip-confirmation (-y)" }))) {
    ctx.log.info("Not deleting.");
    return;
  }
  const g = await ctx.api().fetchResult<Gateway>("DELETE", path);
  ctx.log.info(`Deleted AI gateway ${g.id} and its logs`);
}

export async function showLogs(args: Args, ctx: CliContext): Promise<void> {
  const limit = Number(args.limit ?? 20);
  if (!Number.isInteger(limit) || limit < 1 || limit > 50) throw new UsageError("--limit must be a whole number from 1 to 50");
  const query = { per_page: limit, order_by: "created_at", order_by_direction: "desc", success: args.failed ? "false" : undefined };
  const rows = await ctx.api().fetchResult<LogRecord[]>("GET", `${await gatewayPath(ctx, args.gateway)}/logs`, { query });
  if (args.json) return ctx.json(rows);
  if (!rows.length) return ctx.log.info(`No logs in ${args.gateway}${args.failed ? " for failed requests" : ""}.`);
  ctx.write("ID                          CREATED                   STATUS  CACHED  MS      TOKENS     COST        PROVIDER/MODEL\n");
  for (const l of rows) {
    const tokens = l.tokens_in === null && l.tokens_out === null ? "-" : `${l.tokens_in ?? "-"}/${l.tokens_out ?? "-"}`;
    const cost = l.cost === null ? "-" : `$${l.cost.toFixed(6)}`;
    ctx.write(
      `${l.id}  ${l.created_at}  ${String(l.status_code).padEnd(6)}  ${(l.cached ? "yes" : "no").padEnd(6)}  ${String(l.duration).padEnd(6)}  ${tokens.padEnd(9)}  ${cost.padEnd(10)}  ${l.provider}/${l.model ?? "?"}\n`,
    );
  }
}
