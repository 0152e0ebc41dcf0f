import { randomBytes } from "node:crypto";
import type { Bus } from "../../core/cluster/bus.js";
import type { Logger } from "../../core/logger.js";
import type { TraceEvent } from "../tail/events.js";
import { LOGS_AREA } from "./pg-store.js";
import { OBSERVABILITY_OFF, policyOf, type LogsPolicy, type ObservabilitySetting } from "./settings.js";
import type { AccountCap, LogsStore, NewLogEvent } from "./store.js";

/** Lines kept of one invocation, and characters of one line (workerd bounds them too; these bound a row). */
const MAX_LINES = 256;
const MAX_LINE_CHARS = 16 * 1024;
/** Events waiting to be written; past it, new ones are dropped (the store is slower than the Workers' traffic). */
const MAX_PENDING = 10_000;
/** Events written in one transaction, and how soon a waiting one is written. */
const WRITE_BATCH = 500;
const FLUSH_MS = 250;
/** How often events past the retention are removed: hourly, or more often for a retention under two hours. */
const pruneEvery = (retentionMs: number) => Math.min(3600_000, Math.max(1_000, retentionMs / 2));

export interface LogsOptions {
  retentionMs: number;
  cap: AccountCap;
}

interface Known {
  accountId: string;
  setting: ObservabilitySetting;
  policy: LogsPolicy;
}

/** The text of one console line, as console.log prints its values. */
const lineText = (message: unknown): string =>
  (Array.isArray(message) ? message : [message])
    .map((m) => (typeof m === "string" ? m : JSON.stringify(m)))
    .join(" ")
    .slice(0, MAX_LINE_CHARS);

/**
 * Workers Logs on this node: each Worker's `observability` setting in memory (a Worker whose logs are kept runs
 * with the tail worker, as a tailed one does), the invocations the tail worker reports sampled by its
 * head_sampling_rate and written to the store in batches, and the hourly removal of what is older than the retention.
 * The settings are the store's: a change made through another node arrives as a bus notice `<account>/<script>`.
 */
export class WorkersLogs {
  /** By script name (a name is unique on the platform); the account is checked on every event. */
  private readonly known = new Map<string, Known>();
  private pending: NewLogEvent[] = [];
  private dropped = 0;
  private flushTimer?: NodeJS.Timeout;
  private pruneTimer?: NodeJS.Timeout;
  private writing: Promise<void> = Promise.resolve();
  private unsubscribe?: () => void;

  constructor(
    private readonly store: LogsStore,
    private readonly opts: LogsOptions,
    private readonly log: Logger,
    private readonly bus: Bus,
    /** Called when a script's logs start or stop being kept: it runs again with or without the tail worker. */
    private readonly changed: (script: string) => Promise<void>,
    private readonly random: () => number = Math.random,
  ) {}

  /** Loads the settings; before the Workers start, so that each starts with the tail worker if its logs are kept. */
  async start(): Promise<void> {
    await this.reloadAll(false);
    this.unsubscribe = this.bus.subscribe(LOGS_AREA, (event) => {
      if (event.type === "resync")
        return void this.reloadAll(true).catch((err: unknown) => this.log.warn({ err: (err as Error).message }, "could not reload the Workers Logs settings"));
      if (event.origin === this.bus.nodeId) return;
      const [accountId, script] = event.what.split("/");
      if (accountId && script) void this.reload(accountId, script);
    });
    const prune = () => void this.prune().catch((err: unknown) => this.log.warn({ err: (err as Error).message }, "could not remove old Workers Logs events"));
    prune();
    this.pruneTimer = setInterval(prune, pruneEvery(this.opts.retentionMs));
    this.pruneTimer.unref();
  }

  async stop(): Promise<void> {
    this.unsubscribe?.();
    clearInterval(this.pruneTimer);
    clearTimeout(this.flushTimer);
    await this.flush();
  }

  /** Removes the events older than the retention; how many. */
  prune(now = Date.now()): Promise<number> {
    return this.store.prune(now - this.opts.retentionMs);
  }

  private async reloadAll(sync: boolean): Promise<void> {
    const before = new Set(this.known.keys());
    this.known.clear();
    for (const s of await this.store.settings()) this.remember(s.accountId, s.script, s.setting);
    if (sync) for (const name of new Set([...before, ...this.known.keys()])) await this.changed(name).catch(() => undefined);
  }

  private async reload(accountId: string, script: string): Promise<void> {
    try {
      this.remember(accountId, script, (await this.store.setting(accountId, script)) ?? OBSERVABILITY_OFF);
      await this.changed(script);
    } catch (err) {
      this.log.warn({ script, err: (err as Error).message }, "could not reload a Worker's Workers Logs setting");
    }
  }

  private remember(accountId: string, script: string, setting: ObservabilitySetting): void {
    const policy = policyOf(setting);
    if (!policy.keep) {
      if (this.known.get(script)?.accountId === accountId) this.known.delete(script);
      return;
    }
    this.known.set(script, { accountId, setting, policy });
  }

  /** A Worker's setting as `GET …/script-settings` shows it. */
  async settingOf(accountId: string, script: string): Promise<ObservabilitySetting> {
    return (await this.store.setting(accountId, script)) ?? OBSERVABILITY_OFF;
  }

  /** Sets a Worker's setting (an upload's, or script-settings'), and runs the Worker with or without the tail worker. */
  async configure(accountId: string, script: string, setting: ObservabilitySetting): Promise<void> {
    await this.store.setSetting(accountId, script, setting);
    this.remember(accountId, script, setting);
    await this.bus.publish(LOGS_AREA, `${accountId}/${script}`);
    await this.changed(script);
  }

  /** A Worker is gone: its setting goes (its events stay until the retention ends: they are the account's). */
  async scriptRemoved(accountId: string, script: string): Promise<void> {
    await this.store.setSetting(accountId, script, undefined);
    if (this.known.get(script)?.accountId === accountId) this.known.delete(script);
    await this.bus.publish(LOGS_AREA, `${accountId}/${script}`);
  }

  /**
   * The share of `script`'s invocations kept (its head_sampling_rate; 0: none). Its workerd runs the tail worker
   * for them, which samples before it reports (tail-worker.ts): an invocation not kept costs no post and no work here.
   */
  rate(script: string): number {
    return this.known.get(script)?.policy.rate ?? 0;
  }

  /**
   * One invocation of `script` of `accountId`, as the tail worker reported it, having kept `reportedRate` of the
   * invocations (1 while the script is tailed): kept with the probability that makes the share kept the policy's.
   */
  take(accountId: string, script: string, event: TraceEvent, reportedRate = 1): void {
    const k = this.known.get(script);
    // Only the account that set the setting: a name freed and taken by another account is another Worker.
    if (!k || k.accountId !== accountId) return;
    if (k.policy.rate < reportedRate && this.random() * reportedRate >= k.policy.rate) return;
    const events = eventsOf(accountId, script, event, k.policy);
    if (this.pending.length + events.length > MAX_PENDING) {
      this.dropped += events.length;
      return;
    }
    this.pending.push(...events);
    if (this.pending.length >= WRITE_BATCH) void this.flush();
    else this.flushTimer ??= setTimeout(() => void this.flush(), FLUSH_MS);
  }

  /** Writes what waits, in batches, one write at a time. */
  flush(): Promise<void> {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const batch = this.pending;
    this.pending = [];
    if (this.dropped > 0) {
      this.log.warn({ dropped: this.dropped }, "Workers Logs events dropped: the store does not keep up");
      this.dropped = 0;
    }
    this.writing = this.writing.then(async () => {
      for (let i = 0; i < batch.length; i += WRITE_BATCH) {
        try {
          await this.store.append(batch.slice(i, i + WRITE_BATCH), this.opts.cap);
        } catch (err) {
          this.log.warn({ err: (err as Error).message, events: Math.min(WRITE_BATCH, batch.length - i) }, "could not keep Workers Logs events");
        }
      }
    });
    return this.writing;
  }
}

/**
 * A new invocation's request id: 24 hex digits, a random prefix of this process and a counter (unique without a
 * call into the random source per invocation, which cost more than the rest of building its rows).
 */
const REQUEST_ID_PREFIX = randomBytes(6).toString("hex");
let requestCounter = 0;
const nextRequestId = () => REQUEST_ID_PREFIX + (requestCounter++ % 2 ** 48).toString(16).padStart(12, "0");

/** The path of a request's URL (without its query), read without a URL parser: workerd gives absolute http(s) URLs. */
function pathOf(url: string): string {
  const scheme = url.indexOf("://");
  if (scheme < 0) return url;
  const slash = url.indexOf("/", scheme + 3);
  if (slash < 0) return "/";
  let end = url.length;
  for (const c of ["?", "#"]) {
    const at = url.indexOf(c, slash);
    if (at >= 0 && at < end) end = at;
  }
  return url.slice(slash, end);
}

/** The rows of one invocation: its own event (unless invocation_logs is off), its console lines, its exceptions. */
export function eventsOf(accountId: string, script: string, e: TraceEvent, policy: LogsPolicy): NewLogEvent[] {
  const requestId = nextRequestId();
  const ev = (e.event ?? {}) as {
    request?: { method?: string; url?: string };
    response?: { status?: number };
    cron?: string;
    scheduledTime?: number;
    queue?: string;
  };
  const request = ev.request;
  const url = typeof request?.url === "string" ? request.url : undefined;
  const method = typeof request?.method === "string" ? request.method : undefined;
  const status = typeof ev.response?.status === "number" ? ev.response.status : undefined;
  const origin = request ? "fetch" : ev.cron !== undefined ? "scheduled" : ev.queue !== undefined ? "queue" : "unknown";
  const path = url === undefined ? undefined : pathOf(url);
  const trigger = request ? `${method ?? "GET"} ${path ?? ""}` : origin === "scheduled" ? String(ev.cron) : origin;
  const wall = typeof e.wallTime === "number" ? e.wallTime : undefined;
  const cpu = typeof e.cpuTime === "number" ? e.cpuTime : undefined;
  const timestamp = typeof e.eventTimestamp === "number" ? e.eventTimestamp : Date.now();
  const firstError = e.exceptions[0] && `${e.exceptions[0].name}: ${e.exceptions[0].message}`;
  const workers = {
    eventType: origin,
    scriptName: script,
    outcome: e.outcome,
    requestId,
    executionModel: "stateless",
    ...(wall !== undefined && { wallTimeMs: wall }),
    ...(cpu !== undefined && { cpuTimeMs: cpu }),
    truncated: e.logs.length > MAX_LINES || e.truncated === true,
    event: request ? { request: { method, url }, ...(status !== undefined && { response: { status } }) } : { cron: ev.cron, scheduledTime: ev.scheduledTime },
  };
  const base = { accountId, script, requestId, outcome: e.outcome, trigger, origin, method, url, statusCode: status };
  const out: NewLogEvent[] = [];
  if (policy.invocationLogs) {
    out.push({
      ...base,
      timestamp,
      type: "cf-worker-event",
      level: e.outcome === "ok" ? "info" : "error",
      message: trigger,
      ...(firstError && { error: firstError }),
      duration: wall,
      cpuTime: cpu,
      body: { source: { outcome: e.outcome, ...(status !== undefined && { statusCode: status }), trigger }, workers },
    });
  }
  for (const line of e.logs.slice(0, MAX_LINES)) {
    const values = Array.isArray(line.message) ? line.message : [line.message];
    const only = values.length === 1 && typeof values[0] === "object" && values[0] !== null && !Array.isArray(values[0]) ? values[0] : undefined;
    const text = lineText(line.message);
    out.push({
      ...base,
      timestamp: typeof line.timestamp === "number" ? line.timestamp : timestamp,
      type: "cf-worker",
      level: typeof line.level === "string" ? line.level : "log",
      message: text,
      body: { source: only && text.length < MAX_LINE_CHARS ? only : { message: text }, workers },
    });
  }
  for (const x of e.exceptions.slice(0, 16)) {
    const text = `${x.name}: ${x.message}`.slice(0, MAX_LINE_CHARS);
    out.push({
      ...base,
      timestamp: typeof x.timestamp === "number" ? x.timestamp : timestamp,
      type: "cf-worker",
      level: "error",
      message: text,
      error: text,
      body: { source: { name: x.name, message: x.message, ...(x.stack && { stack: String(x.stack).slice(0, MAX_LINE_CHARS) }) }, workers },
    });
  }
  return out;
}
