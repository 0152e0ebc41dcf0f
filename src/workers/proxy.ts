import { Agent, request, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { Logger } from "../core/logger.js";
import type { WorkersRuntime } from "./runtime.js";

/** Headers that describe one connection, not the request; they are not forwarded (RFC 9110 §7.6.1). */
const HOP_BY_HOP = new Set(["connection", "keep-alive", "proxy-connection", "te", "trailer", "upgrade", "transfer-encoding"]);
// Also not forwarded: `expect` (Node's server already answered 100-continue to the client; the body follows).

function forwardable(headers: IncomingHttpHeaders, keep = new Set<string>()): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = {};
  const listed = String(headers.connection ?? "")
    .split(",")
    .map((s) => s.trim().toLowerCase());
  for (const [k, v] of Object.entries(headers)) if ((!HOP_BY_HOP.has(k) || keep.has(k)) && k !== "expect" && !listed.includes(k)) out[k] = v;
  return out;
}

/** The script a Host names: `<script>.<domain>` (any port), or undefined when the Host is not under the domain. */
export function scriptOfHost(host: string | undefined, domain: string): string | undefined {
  if (!host) return undefined;
  const h = host.toLowerCase().replace(/:\d+$/, "").replace(/\.$/, "");
  const suffix = `.${domain}`;
  if (!h.endsWith(suffix)) return undefined;
  const name = h.slice(0, -suffix.length);
  return /^[a-z0-9-]+$/.test(name) ? name : undefined;
}

function plain(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8", "content-length": Buffer.byteLength(text) }).end(text);
}

/**
 * Forwards worker traffic to the script's workerd: method, path, headers and body as received, streamed in
 * both directions (a 1 GiB upload never sits in memory). Connections to workerd are kept alive.
 */
export class WorkerProxy {
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 64 });

  constructor(
    private readonly runtime: WorkersRuntime,
    private readonly domain: string,
    private readonly log: Logger,
  ) {}

  handle(req: IncomingMessage, res: ServerResponse): boolean {
    const name = scriptOfHost(req.headers.host, this.domain);
    if (!name) return false;
    void this.forward(name, req, res);
    return true;
  }

  private async forward(name: string, req: IncomingMessage, res: ServerResponse, retry = true): Promise<void> {
    const rt = this.runtime.lookup(name);
    if (!rt) {
      req.resume();
      return plain(res, 404, `No worker is deployed at ${name}.${this.domain}\n`);
    }
    // Normally immediate; waits only while a crashed workerd is being restarted.
    const port = rt.port ?? (await rt.waitPort(10_000));
    if (port === undefined) {
      req.resume();
      return plain(res, 503, `Worker ${name} is not running; try again shortly\n`);
    }
    // transfer-encoding stays: Node then frames the streamed body the same way the client did.
    const headers = forwardable(req.headers, new Set(["transfer-encoding"]));
    // The script learns the client address from this header; a client cannot supply its own.
    headers["cf-connecting-ip"] = req.socket.remoteAddress ?? "";
    const bodyless = !req.headers["transfer-encoding"] && Number(req.headers["content-length"] ?? 0) === 0;
    const upstream = request({ host: "127.0.0.1", port, method: req.method, path: req.url, headers, agent: this.agent }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.statusMessage, forwardable(up.headers));
      up.pipe(res);
      up.on("error", () => res.destroy());
    });
    upstream.on("error", (err: NodeJS.ErrnoException) => {
      // A redeploy can close an idle kept-alive connection to the old workerd just as it is reused (or its
      // listener just as we connect). Nothing reached the script then, so a request without a body is sent
      // once more, to whichever process is live now. A reset on a fresh connection is not retried.
      const neverReached = err.code === "ECONNREFUSED" || (err.code === "ECONNRESET" && upstream.reusedSocket);
      if (retry && bodyless && neverReached && !res.headersSent && !res.destroyed) {
        void this.forward(name, req, res, false);
        return;
      }
      this.log.warn({ script: name, err: err.message }, "worker request failed");
      if (!res.headersSent) plain(res, 502, `Worker ${name} did not answer\n`);
      else res.destroy();
    });
    const onClose = () => {
      if (!res.writableFinished) upstream.destroy();
    };
    res.once("close", onClose);
    upstream.once("close", () => res.off("close", onClose));
    if (bodyless) upstream.end();
    else req.pipe(upstream);
  }

  close(): void {
    this.agent.destroy();
  }
}
