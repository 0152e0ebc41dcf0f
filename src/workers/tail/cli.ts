import WebSocket from "ws";
import type { CliContext } from "../../core/cli/context.js";
import { UserError } from "../../core/errors.js";
import { resolveScriptName, scriptPath } from "../cli/target.js";
import type { TailFilter, TraceEvent } from "./events.js";
import { TRACE_PROTOCOL } from "./hub.js";

export interface TailArgs {
  script?: string;
  name?: string;
  env?: string;
  format?: string;
  status?: string[];
  method?: string[];
  search?: string;
  header?: string;
  ip?: string[];
}

/** `--status` as wrangler maps it to outcomes. */
const OUTCOMES: Record<string, string[]> = {
  ok: ["ok"],
  error: ["exception", "exceededCpu", "exceededMemory", "unknown"],
  canceled: ["canceled"],
};

/** The API filters of the command line (the body wrangler sends for the same flags). */
export function filtersOf(args: TailArgs): TailFilter[] {
  const filters: TailFilter[] = [];
  if (args.status?.length) {
    const unknown = args.status.filter((s) => !(s in OUTCOMES));
    if (unknown.length) throw new UserError(`--status must be ok, error or canceled (got ${unknown.join(", ")})`);
    filters.push({ outcome: [...new Set(args.status.flatMap((s) => OUTCOMES[s]!))] as never });
  }
  if (args.method?.length) filters.push({ method: args.method });
  if (args.header) {
    const [key, query] = args.header.split(":", 2).map((s) => s.trim());
    filters.push({ header: query ? { key: key!, query } : { key: key! } });
  }
  if (args.ip?.length) filters.push({ client_ip: args.ip });
  if (args.search) filters.push({ query: args.search });
  return filters;
}

const OUTCOME_TEXT: Record<string, string> = {
  ok: "Ok",
  canceled: "Canceled",
  exception: "Exception Thrown",
  exceededCpu: "Exceeded CPU Limit",
  exceededMemory: "Exceeded Memory Limit",
};

const valueText = (v: unknown) => (typeof v === "string" ? v : JSON.stringify(v));

/** One event as `wrangler tail --format pretty` prints it: a summary line, then its logs and exceptions. */
export function prettyEvent(e: TraceEvent): string {
  const outcome = OUTCOME_TEXT[e.outcome] ?? "Unknown";
  const at = new Date(e.eventTimestamp ?? Date.now()).toISOString();
  const ev = (e.event ?? {}) as {
    request?: { method?: string; url?: string };
    response?: { status?: number };
    cron?: string;
    scheduledTime?: number;
    type?: string;
    message?: string;
  };
  let line: string;
  if (ev.request)
    line = `${String(ev.request.method).toUpperCase()} ${ev.request.url} - ${outcome}${ev.response?.status ? ` (${ev.response.status})` : ""} @ ${at}`;
  else if (ev.cron !== undefined) line = `"${ev.cron}" @ ${new Date(ev.scheduledTime ?? 0).toISOString()} - ${outcome}`;
  else if (ev.type && ev.message) line = ev.message;
  else line = `${e.entrypoint ?? "Event"} - ${outcome} @ ${at}`;
  const out = [line];
  for (const l of e.logs) out.push(`  (${l.level}) ${(Array.isArray(l.message) ? l.message : [l.message]).map(valueText).join(" ")}`);
  for (const x of e.exceptions) out.push(`  ${x.name}: ${x.message}`);
  return `${out.join("\n")}\n`;
}

/**
 * `edgecli tail [script]`: opens a tail session through the API (`POST …/tails`, the endpoint wrangler uses), reads
 * its WebSocket and prints each event until interrupted, then deletes the session. Exits 1 if the platform closes it.
 */
export async function tail(args: TailArgs, ctx: CliContext): Promise<number | void> {
  const script = args.script ?? (await resolveScriptName(ctx, args));
  const accountId = await ctx.accountId(args.env);
  const format = args.format ?? (ctx.io.stdout.isTTY ? "pretty" : "json");
  const api = ctx.api();
  const path = `${scriptPath(accountId, script)}/tails`;
  const session = await api.fetchResult<{ id: string; url: string; expires_at: string }>("POST", path, { json: { filters: filtersOf(args) } });
  const ws = new WebSocket(session.url, TRACE_PROTOCOL);
  const deleteSession = () => api.fetchResult("DELETE", `${path}/${session.id}`).catch(() => undefined);
  const ended = new Promise<number>((resolve) => {
    const stop = () => {
      ws.removeAllListeners("close");
      ws.close(1000);
      void deleteSession().then(() => resolve(0));
    };
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
    ws.on("error", (err) => {
      ctx.log.error(`The tail connection failed: ${err.message}`);
      resolve(1);
    });
    ws.on("close", (code, reason) => {
      ctx.log.error(`The platform closed the tail (${code}${reason.length ? `: ${reason.toString()}` : ""})`);
      void deleteSession().then(() => resolve(1));
    });
  });
  ws.once("open", () => {
    if (format === "pretty") ctx.log.info(`Connected to ${script}, waiting for logs... (expires at ${session.expires_at})`);
  });
  ws.on("message", (data: Buffer) => {
    if (format === "json") return ctx.write(`${data.toString("utf8")}\n`);
    try {
      ctx.write(prettyEvent(JSON.parse(data.toString("utf8")) as TraceEvent));
    } catch {
      ctx.write(`${data.toString("utf8")}\n`);
    }
  });
  return ended;
}
