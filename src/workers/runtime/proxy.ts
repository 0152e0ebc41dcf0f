import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import type { TLSSocket } from "node:tls";
import type { Dispatcher } from "undici";
import type { Logger } from "../../core/logger.js";
import type { WorkersRuntime } from "./runtime.js";
import { FORWARDED_PROTO } from "./capnp-config.js";

/** Headers that describe one connection, not the request; they are not forwarded (RFC 9110 §7.6.1). */
export const HOP_BY_HOP = new Set(["connection", "keep-alive", "proxy-connection", "te", "trailer", "upgrade", "transfer-encoding"]);
// Also not forwarded: `expect` (Node's server already answered 100-continue to the client; the body follows),
// and a client's own `cf-connecting-ip` (the proxy sets it).
export const NOT_FORWARDED = new Set([...HOP_BY_HOP, "expect", "cf-connecting-ip"]);

/**
 * What the edge tells a Worker about its client, on every request it forwards: the client's address
 * (`cf-connecting-ip`) and whether it came over the HTTPS port (`x-forwarded-proto`, which workerd turns into
 * `request.url`'s scheme). Both replace whatever the client sent: a plain request must not pass for HTTPS.
 */
export function setEdgeRequestHeaders(headers: Record<string, string | string[]>, req: IncomingMessage): void {
  headers["cf-connecting-ip"] = req.socket.remoteAddress ?? "";
  headers[FORWARDED_PROTO] = (req.socket as TLSSocket).encrypted ? "https" : "http";
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

/**
 * workerd's answer headers as a flat [name, value, ...] list for `writeHead` (repeated ones, such as set-cookie, stay
 * separate), without hop-by-hop ones and those its Connection header names; and its content-length (-1 when none).
 */
export function relayableHeaders(raw: readonly Buffer[]): { list: string[]; contentLength: number } {
  const list: string[] = [];
  let listed: Set<string> | undefined;
  let contentLength = -1;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i].toString("latin1").toLowerCase();
    if (name === "connection") {
      listed ??= new Set();
      for (const t of raw[i + 1].toString("latin1").toLowerCase().split(",")) listed.add(t.trim());
      continue;
    }
    if (HOP_BY_HOP.has(name)) continue;
    const value = raw[i + 1].toString("latin1");
    if (name === "content-length") contentLength = Number(value);
    list.push(name, value);
  }
  if (!listed) return { list, contentLength };
  const kept: string[] = [];
  for (let i = 0; i < list.length; i += 2) if (!listed.has(list[i])) kept.push(list[i], list[i + 1]);
  return { list: kept, contentLength: listed.has("content-length") ? -1 : contentLength };
}

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

function plain(res: ServerResponse, status: number, text: string): void {
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
  constructor(
    private readonly runtime: WorkersRuntime,
    private readonly domain: string,
    /** How long a script may take to start its answer, and then go silent within it (0: no limit; see config.ts). */
    private readonly answerTimeoutMs: number,
    private readonly log: Logger,
  ) {}

  handle(req: IncomingMessage, res: ServerResponse): boolean {
    const name = scriptOfHost(req.headers.host, this.domain);
    if (!name) return false;
    this.serve(name, req, res);
    return true;
  }

  /** Forwards `req` to script `name`'s live process as traffic of the edge port is (also the fetch calls of service bindings). */
  serve(name: string, req: IncomingMessage, res: ServerResponse): void {
    const bodyless = !req.headers["transfer-encoding"] && Number(req.headers["content-length"] ?? 0) === 0;
    if (bodyless) req.resume();
    // During a gradual deployment, one of the two versions (by share, or the request's version override).
    const rt = this.runtime.pick(name, req.headers);
    // Normally immediate; waits only while a crashed workerd is being restarted.
    const proc = rt?.live;
    if (proc) this.forward(name, proc.pool, req, res, bodyless, true);
    else void this.forwardWhenLive(name, req, res, bodyless, true);
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
    const headers = forwardable(req.headers, NOT_FORWARDED);
    setEdgeRequestHeaders(headers, req);
    let abort: ((err: Error) => void) | undefined;
    let remaining = -1;
    let last: Buffer | undefined;
    let resume: (() => void) | undefined;
    const onDrain = () => resume?.();
    const onClose = () => {
      if (!res.writableFinished) abort?.(new Error("the client went away"));
    };
    res.once("close", onClose);
    const done = () => {
      res.off("close", onClose);
      res.off("drain", onDrain);
    };
    // undici's own handler interface (onConnect/onHeaders/onData/...): the controller-style one is an adapter over it
    // that turns workerd's raw header list into an object first, which this relays as a list anyway.
    const handler: Dispatcher.DispatchHandler = {
      onConnect: (abortRequest) => {
        abort = abortRequest;
        if (res.destroyed) abortRequest(new Error("the client went away"));
      },
      onHeaders: (status, rawHeaders, resumeReading, statusMessage) => {
        // 1xx answers (e.g. 103 Early Hints) are not relayed; the final answer follows.
        if (status < 200) return true;
        resume = resumeReading;
        const relayed = relayableHeaders(rawHeaders);
        remaining = relayed.contentLength;
        res.writeHead(status, statusMessage, relayed.list);
        return true;
      },
      onData: (chunk) => {
        remaining -= chunk.length;
        if (remaining === 0) {
          last = chunk;
          return true;
        }
        if (res.write(chunk)) return true;
        res.once("drain", onDrain);
        return false;
      },
      onComplete: () => {
        done();
        res.end(last);
      },
      onError: (err: NodeJS.ErrnoException) => {
        done();
        if (res.destroyed) return;
        // A crash or a redeploy can close a kept-alive connection to the old workerd (or remove its socket
        // file) just as it is used. Nothing reached a script then, so a request without a body is sent once
        // more, to whichever process is live now.
        const code = err.code ?? "";
        if (retry && bodyless && !res.headersSent && NEVER_REACHED.has(code)) {
          void this.forwardWhenLive(name, req, res, bodyless, false);
          return;
        }
        this.log.warn({ script: name, err: err.message, code: err.code }, "worker request failed");
        if (res.headersSent) res.destroy();
        else if (code === "UND_ERR_HEADERS_TIMEOUT") {
          plain(res, 504, `Worker ${name} did not start its answer within ${this.answerTimeoutMs / 1000} s (edgecli serve --worker-answer-timeout)\n`);
        } else plain(res, 502, `Worker ${name} did not answer\n`);
      },
    };
    const timeout = this.answerTimeoutMs;
    pool.dispatch(
      {
        path: req.url ?? "/",
        method: req.method as Dispatcher.HttpMethod,
        headers,
        body: bodyless ? null : req,
        headersTimeout: timeout,
        bodyTimeout: timeout,
      },
      handler,
    );
  }
}
