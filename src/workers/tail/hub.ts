import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { refuseOnSocket } from "../../core/http/transport-errors.js";
import type { Logger } from "../../core/logger.js";
import type { BindingCall } from "../bindings/server.js";
import { passes, traceEventOf, type TailFilter, type TraceEvent } from "./events.js";
import { TailErrors } from "./errors.js";
import { TraceSocket } from "./trace-socket.js";

/** The WebSocket subprotocol of tail sessions (what wrangler asks for). */
export const TRACE_PROTOCOL = "trace-v1";
/** Where a session's WebSocket is, on the edge port: `/tail/v1/<id>`. The id is the credential, as on the hosted API. */
export const TAIL_PATH = "/tail/v1/";
/** How long a session lasts. */
export const TAIL_LIFETIME_MS = 6 * 60 * 60 * 1000;
/** Sessions a script may have at once (the hosted limit). */
export const TAILS_PER_SCRIPT = 10;
/** How long a session with no WebSocket connected is kept (for a client to connect, or reconnect). */
const UNCONNECTED_MS = 60_000;
/** Events waiting to be sent to one slow client, in bytes, before later ones are dropped. */
const SEND_BUFFER_BYTES = 8 * 1024 * 1024;
/** Largest body the tail worker may post (one batch of events). */
const EVENTS_BODY_BYTES = 4 * 1024 * 1024;

/** The share of invocations a tail worker's post says it sampled (`?rate=`, tail-worker.ts); 1 when absent or odd. */
function reportedRateOf(url: string | undefined): number {
  const q = url?.indexOf("?rate=") ?? -1;
  const rate = q < 0 ? 1 : Number(url!.slice(q + 6));
  return rate > 0 && rate <= 1 ? rate : 1;
}

/** How the log names a session: a prefix of its id, as the whole id is the credential that joins it. */
const logName = (s: { id: string }) => s.id.slice(0, 8);

export interface TailSession {
  id: string;
  accountId: string;
  script: string;
  filters: TailFilter[];
  createdAt: number;
  expiresAt: number;
  socket?: TraceSocket;
  /** Ends the session when nothing is connected for a while, and at its expiry. */
  timer?: NodeJS.Timeout;
  /** True while events are dropped because the client does not read them fast enough. */
  overloaded: boolean;
}

/**
 * Live tail sessions of this node: created through the API (api.ts), joined by a WebSocket on the edge port, fed
 * with the events each script's tail worker posts to the binding server (tail-worker.ts). Sessions live in memory:
 * a platform restart ends them (the client sees its WebSocket close).
 */
/** Another reader of every invocation a script's tail worker reports (Workers Logs), beside the live sessions. */
export interface TraceConsumer {
  /** The share of `script`'s invocations it wants (0: none; the script then runs with the tail worker unless 0). */
  rate(script: string): number;
  /** One invocation, reported by a tail worker that sampled at `reportedRate` (the consumer samples the rest). */
  take(accountId: string, script: string, event: TraceEvent, reportedRate: number): void;
}

export class TailHub {
  private readonly sessions = new Map<string, TailSession>();
  private consumer?: TraceConsumer;
  private readonly byScript = new Map<string, Set<TailSession>>();

  constructor(
    private readonly log: Logger,
    /**
     * Called when a script gets its first session or loses its last: the script's workerd runs the tail worker only
     * while someone tails it, because the worker costs every invocation (about half of a small script's throughput).
     */
    private tailingChanged: (script: string) => Promise<void> = async () => undefined,
  ) {}

  /** Hands every reported invocation to `consumer` too (Workers Logs, made after the hub). */
  consume(consumer: TraceConsumer): void {
    this.consumer = consumer;
  }

  /**
   * The share of `script`'s invocations its tail worker reports: all while someone tails it, else the share the
   * consumer keeps (its sampling rate); 0: its workerd runs no tail worker.
   */
  reportedRate(script: string): number {
    return this.tailed(script) ? 1 : (this.consumer?.rate(script) ?? 0);
  }

  /** Sets what a script gaining its first session or losing its last does (the deployer, made after the hub). */
  onTailingChanged(restart: (script: string) => Promise<void>): void {
    this.tailingChanged = restart;
  }

  /**
   * Opens a session on `script` of `accountId`, once the script runs with the tail worker; refused when the script
   * has too many sessions.
   */
  async open(accountId: string, script: string, filters: TailFilter[]): Promise<TailSession> {
    const existing = this.byScript.get(script);
    // Counted per account too: sessions another account left on the name never count against its next owner.
    if (existing && [...existing].filter((s) => s.accountId === accountId).length >= TAILS_PER_SCRIPT) throw TailErrors.tooMany(TAILS_PER_SCRIPT);
    const now = Date.now();
    const session: TailSession = {
      id: randomBytes(16).toString("hex"),
      accountId,
      script,
      filters,
      createdAt: now,
      expiresAt: now + TAIL_LIFETIME_MS,
      overloaded: false,
    };
    this.sessions.set(session.id, session);
    if (existing) existing.add(session);
    else this.byScript.set(script, new Set([session]));
    this.endIfUnconnected(session);
    if (!existing) {
      try {
        await this.tailingChanged(script);
      } catch (err) {
        this.end(session, 1011, "the script could not start with the tail worker");
        throw err;
      }
    }
    this.log.info({ script, tail: logName(session) }, "tail session opened");
    return session;
  }

  /** The sessions of a script of an account. */
  list(accountId: string, script: string): TailSession[] {
    return [...(this.byScript.get(script) ?? [])].filter((s) => s.accountId === accountId);
  }

  /** Ends a session of that script and account; false when there is none. */
  close(accountId: string, script: string, id: string): boolean {
    const s = this.sessions.get(id);
    if (!s || s.accountId !== accountId || s.script !== script) return false;
    this.end(s, 1000, "tail deleted");
    return true;
  }

  /**
   * Ends the sessions on `script` that are not of `owner`, the account the name belongs to now (undefined: the
   * script was deleted). A session is on a script, not on a name: once its script is gone it ends, and a script of
   * the same name made later, by any account, is not reachable through it.
   */
  nameOwner(script: string, owner: string | undefined): void {
    for (const s of [...(this.byScript.get(script) ?? [])]) if (s.accountId !== owner) this.end(s, 1000, "the script was deleted");
  }

  /** Whether anyone tails `script` now. */
  tailed(script: string): boolean {
    return (this.byScript.get(script)?.size ?? 0) > 0;
  }

  private end(s: TailSession, code: number, reason: string): void {
    if (!this.sessions.delete(s.id)) return;
    const set = this.byScript.get(s.script);
    set?.delete(s);
    if (set?.size === 0) {
      this.byScript.delete(s.script);
      this.tailingChanged(s.script).catch((err: unknown) =>
        this.log.warn({ script: s.script, err: (err as Error).message }, "could not detach the tail worker; it keeps running until the next deploy"),
      );
    }
    clearTimeout(s.timer);
    s.socket?.close(code, reason);
    this.log.info({ script: s.script, tail: logName(s), reason }, "tail session ended");
  }

  /** Ends the session unless a client connects within a minute; otherwise at its expiry. */
  private endIfUnconnected(s: TailSession): void {
    clearTimeout(s.timer);
    const ms = Math.min(UNCONNECTED_MS, s.expiresAt - Date.now());
    s.timer = setTimeout(() => this.end(s, 1000, "tail expired"), ms);
    s.timer.unref();
  }

  /**
   * Takes a WebSocket upgrade for `/tail/v1/<id>` on the edge port; false for any other path. The session must exist
   * and have no client; the client must ask for `trace-v1`.
   */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const url = req.url ?? "";
    if (!url.startsWith(TAIL_PATH)) return false;
    const s = this.sessions.get(url.slice(TAIL_PATH.length).split("?")[0]!);
    const protocols = String(req.headers["sec-websocket-protocol"] ?? "")
      .split(",")
      .map((p) => p.trim());
    if (!s) refuseOnSocket(socket, TailErrors.sessionNotFound());
    else if (s.socket) refuseOnSocket(socket, TailErrors.alreadyConnected());
    else if (!protocols.includes(TRACE_PROTOCOL) || !TraceSocket.acceptable(req)) refuseOnSocket(socket, TailErrors.protocol(TRACE_PROTOCOL));
    else this.attach(s, TraceSocket.accept(req, socket, head, TRACE_PROTOCOL));
    return true;
  }

  private attach(s: TailSession, ws: TraceSocket): void {
    s.socket = ws;
    clearTimeout(s.timer);
    s.timer = setTimeout(() => this.end(s, 1000, "tail expired"), s.expiresAt - Date.now());
    s.timer.unref();
    ws.onClose(() => {
      if (s.socket !== ws) return;
      s.socket = undefined;
      if (this.sessions.has(s.id)) this.endIfUnconnected(s);
    });
  }

  /**
   * Sends one event of `script` of `accountId` to every session of that script whose filters it passes. The account
   * is checked too: a name freed by one account and taken by another is another script.
   */
  publish(accountId: string, script: string, event: TraceEvent): void {
    const sessions = this.byScript.get(script);
    if (!sessions) return;
    let text: string | undefined;
    for (const s of sessions) {
      const ws = s.socket;
      if (s.accountId !== accountId || !ws?.open || !passes(event, s.filters)) continue;
      text ??= JSON.stringify(event);
      if (ws.bufferedAmount + text.length > SEND_BUFFER_BYTES) {
        if (!s.overloaded) this.notice(s, "overload", "Tail is receiving events faster than it can send them: some are dropped");
        s.overloaded = true;
        continue;
      }
      if (s.overloaded) this.notice(s, "overload-stop", "Tail caught up: events are sent again");
      s.overloaded = false;
      ws.send(text);
    }
  }

  /** A notice in the hosted format wrangler prints (`event: {type, message}`). */
  private notice(s: TailSession, type: string, message: string): void {
    s.socket?.send(JSON.stringify({ outcome: "ok", scriptName: s.script, eventTimestamp: Date.now(), logs: [], exceptions: [], event: { type, message } }));
  }

  /**
   * The binding server's handler for the tail worker's posts: `call.resource` is the script the events are of,
   * which only the platform could have written into that worker's config (the script itself cannot reach it).
   */
  readonly bindingHandler = (call: BindingCall, req: IncomingMessage, res: ServerResponse): void => {
    // A tail worker of a version that runs on after its script stopped being tailed or kept: drained, never parsed.
    if (this.reportedRate(call.resource) === 0) {
      req.on("error", () => res.destroy());
      req.on("end", () => res.writeHead(204).end());
      return void req.resume();
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size <= EVENTS_BODY_BYTES) chunks.push(c);
    });
    req.on("error", () => res.destroy());
    req.on("end", () => {
      if (size > EVENTS_BODY_BYTES) {
        this.log.warn({ script: call.resource, bytes: size }, "tail events dropped: the batch is too large");
        return void res.writeHead(413).end();
      }
      let events: unknown;
      try {
        events = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      } catch {
        return void res.writeHead(400).end();
      }
      res.writeHead(204).end();
      if (!Array.isArray(events)) return;
      const tailed = this.tailed(call.resource);
      const kept = (this.consumer?.rate(call.resource) ?? 0) > 0;
      const sampledAt = reportedRateOf(req.url);
      for (const raw of events) {
        const event = traceEventOf(raw, call.resource);
        if (!event) continue;
        // Every invocation while tailed; a sampled share of them only by a version started before the session was.
        if (tailed) this.publish(call.accountId, call.resource, event);
        if (kept) this.consumer!.take(call.accountId, call.resource, event, sampledAt);
      }
    });
  };

  /** Ends every session (the platform stops). */
  stop(): void {
    for (const s of [...this.sessions.values()]) this.end(s, 1001, "the platform is stopping");
  }
}
