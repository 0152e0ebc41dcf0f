import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import type { TLSSocket } from "node:tls";
import type { Dispatcher } from "undici";
import type { Logger } from "../../core/logger.js";
import type { WorkersRuntime } from "./runtime.js";
import { FORWARDED_PROTO } from "./capnp-config.js";
import { BINDING_HEADER } from "../bindings/server.js";
import { HOP_BY_HOP, passedRequestHeaders, relay, relayableHeaders } from "../../core/http/relay.js";
import { invocationStatus, isWorkerdException, type WorkerInvocation } from "../analytics.js";

/** Headers the edge sets on Workers' requests itself: a client's own are dropped (a plain request must not pass for HTTPS). */
const EDGE_SET_FOR_WORKERS = new Set(["cf-connecting-ip", FORWARDED_PROTO, BINDING_HEADER]);
/** Not passed on to workerd (WebSockets, websocket-proxy.ts): hop-by-hop ones and those the edge sets. */
export const NOT_FORWARDED = new Set([...HOP_BY_HOP, ...EDGE_SET_FOR_WORKERS]);
export { HOP_BY_HOP };

/**
 * What the edge tells a Worker about its client, on every request it forwards: the client's address
 * (`cf-connecting-ip`) and whether it came over the HTTPS port (`x-forwarded-proto`, which workerd turns into
 * `request.url`'s scheme). Both replace whatever the client sent: a plain request must not pass for HTTPS.
 */
export function edgeRequestHeaders(req: IncomingMessage): string[] {
  return ["cf-connecting-ip", req.socket.remoteAddress ?? "", FORWARDED_PROTO, (req.socket as TLSSocket).encrypted ? "https" : "http"];
}

/** The same, set on a header object (WebSockets, websocket-proxy.ts). */
export function setEdgeRequestHeaders(headers: Record<string, string | string[]>, req: IncomingMessage): void {
  const set = edgeRequestHeaders(req);
  for (let i = 0; i < set.length; i += 2) headers[set[i]] = set[i + 1];
}

export function forwardable(headers: IncomingHttpHeaders, drop: ReadonlySet<string>): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  // Headers the Connection header names are hop-by-hop too; it is split once, not once per header.
  const listed = headers.connection
    ? new Set(
        String(headers.connection)
          .toLowerCase()
          .split(",")
          .map((t) => t.trim()),
      )
    : undefined;
  for (const k in headers) {
    const v = headers[k];
    if (v === undefined || drop.has(k) || listed?.has(k)) continue;
    out[k] = v;
  }
  return out;
}

export { relayableHeaders };

/**
 * The last Host read and what it named: every request on the edge port is asked this first (AI gateway and API
 * traffic included), and a connection, most often a whole client, keeps sending the same Host.
 */
let lastHost = { host: "", domain: "", name: undefined as string | undefined };

/** The script a Host names: `<script>.<domain>` (any port), or undefined when the Host is not under the domain. */
export function scriptOfHost(host: string | undefined, domain: string): string | undefined {
  if (!host) return undefined;
  if (host === lastHost.host && domain === lastHost.domain) return lastHost.name;
  const name = readScriptOfHost(host, domain);
  lastHost = { host, domain, name };
  return name;
}

function readScriptOfHost(host: string, domain: string): string | undefined {
  const h = host.toLowerCase().replace(/:\d+$/, "").replace(/\.$/, "");
  const suffix = `.${domain}`;
  if (!h.endsWith(suffix)) return undefined;
  const name = h.slice(0, -suffix.length);
  return /^[a-z0-9-]+$/.test(name) ? name : undefined;
}

/** Marks an answer the platform wrote itself (the Worker was not reached: `internalError`), or workerd's for an exception. */
const EDGE_ANSWERED = Symbol("edgeAnswered");
const SCRIPT_THREW = Symbol("scriptThrew");
type MarkedResponse = ServerResponse & { [EDGE_ANSWERED]?: boolean; [SCRIPT_THREW]?: boolean };

function plain(res: ServerResponse, status: number, text: string): void {
  (res as MarkedResponse)[EDGE_ANSWERED] = true;
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8", "content-length": Buffer.byteLength(text) }).end(text);
}

/** Connection-level failures before workerd answered: the request never reached a script. */
export const NEVER_REACHED = new Set(["ECONNREFUSED", "ENOENT", "ECONNRESET", "EPIPE", "UND_ERR_SOCKET", "UND_ERR_CLOSED", "UND_ERR_DESTROYED"]);

/**
 * Forwards worker traffic to the script's workerd: method, path, headers and body as received, streamed in
 * both directions (a 1 GiB upload never sits in memory), over the live process's keep-alive unix socket
 * connections. undici's dispatch API writes the answer straight into the client's response, with no stream
 * objects in between. The chunk that completes an answer of known length is written together with its end,
 * so a small answer leaves in one write; anything else is written as it arrives (streams stay live).
 */
export class WorkerProxy {
  /** Told of every invocation as its answer ends (the GraphQL dataset workersInvocationsAdaptive), once attached. */
  private invocations?: (e: WorkerInvocation) => void;

  constructor(
    private readonly runtime: WorkersRuntime,
    private readonly domain: string,
    /** How long a script may take to start its answer, and then go silent within it (0: no limit; see config.ts). */
    private readonly answerTimeoutMs: number,
    private readonly log: Logger,
    /** Counts each invocation as its answer ends (workers/metrics.ts). */
    private readonly invoked: (name: string, res: ServerResponse) => void = () => {},
  ) {}

  handle(req: IncomingMessage, res: ServerResponse): boolean {
    const name = scriptOfHost(req.headers.host, this.domain);
    if (!name) return false;
    this.serve(name, req, res);
    return true;
  }

  onInvocation(listener: (e: WorkerInvocation) => void): void {
    this.invocations = listener;
  }

  /** Forwards `req` to script `name`'s live process as traffic of the edge port is (also the fetch calls of service bindings). */
  serve(name: string, req: IncomingMessage, res: ServerResponse): void {
    this.invoked(name, res);
    if (this.invocations) this.countInvocation(name, res, this.invocations);
    const bodyless = !req.headers["transfer-encoding"] && Number(req.headers["content-length"] ?? 0) === 0;
    if (bodyless) req.resume();
    // During a gradual deployment, one of the two versions (by share, or the request's version override).
    const rt = this.runtime.pick(name, req.headers);
    // Normally immediate; waits only while a crashed workerd is being restarted.
    const proc = rt?.live;
    if (proc) this.forward(name, proc.pool, req, res, bodyless, true);
    else void this.forwardWhenLive(name, req, res, bodyless, true);
  }

  /** Counts the invocation when its answer ends (or the client leaves), for the script's account as it is then. */
  private countInvocation(name: string, res: ServerResponse, listener: (e: WorkerInvocation) => void): void {
    const started = performance.now();
    res.once("close", () => {
      const live = this.runtime.liveVersion(name);
      // No Worker by that name here (its 404): nothing was invoked.
      if (!live) return;
      listener({
        accountId: live.accountId,
        scriptName: name,
        scriptVersion: live.versionId,
        status: invocationStatus(res, { edgeAnswered: (res as MarkedResponse)[EDGE_ANSWERED] === true, threw: (res as MarkedResponse)[SCRIPT_THREW] === true }),
        wallTimeUs: Math.round((performance.now() - started) * 1000),
      });
    });
  }

  private async forwardWhenLive(name: string, req: IncomingMessage, res: ServerResponse, bodyless: boolean, retry: boolean): Promise<void> {
    // Picked again: a retry comes after the process went away, which a deployment that ended a split may have stopped.
    const rt = this.runtime.pick(name, req.headers);
    if (!rt) {
      req.resume();
      return plain(res, 404, `No worker is deployed at ${name}.${this.domain}\n`);
    }
    const proc = await rt.waitLive(10_000);
    if (!proc) {
      req.resume();
      return plain(res, 503, `Worker ${name} is not running; try again shortly\n`);
    }
    if (!res.destroyed) this.forward(name, proc.pool, req, res, bodyless, retry);
  }

  private forward(name: string, pool: Dispatcher, req: IncomingMessage, res: ServerResponse, bodyless: boolean, retry: boolean): void {
    const timeout = this.answerTimeoutMs;
    relay(pool, res, {
      path: req.url ?? "/",
      method: req.method ?? "GET",
      headers: passedRequestHeaders(req.rawHeaders, EDGE_SET_FOR_WORKERS, edgeRequestHeaders(req)),
      body: bodyless ? null : req,
      headersTimeout: timeout,
      bodyTimeout: timeout,
      answered: this.invocations
        ? (status, headers) => {
            if (isWorkerdException(status, headers)) (res as MarkedResponse)[SCRIPT_THREW] = true;
          }
        : undefined,
      failed: (err, answered) => {
        // A crash or a redeploy can close a kept-alive connection to the old workerd (or remove its socket
        // file) just as it is used. Nothing reached a script then, so a request without a body is sent once
        // more, to whichever process is live now.
        const code = err.code ?? "";
        if (retry && bodyless && !answered && NEVER_REACHED.has(code)) {
          void this.forwardWhenLive(name, req, res, bodyless, false);
          return;
        }
        this.log.warn({ script: name, err: err.message, code: err.code }, "worker request failed");
        if (answered) res.destroy();
        else if (code === "UND_ERR_HEADERS_TIMEOUT") {
          plain(res, 504, `Worker ${name} did not start its answer within ${this.answerTimeoutMs / 1000} s (edgecli serve --worker-answer-timeout)\n`);
        } else plain(res, 502, `Worker ${name} did not answer\n`);
      },
    });
  }
}
