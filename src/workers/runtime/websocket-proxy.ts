import { request, STATUS_CODES, type IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import type { Logger } from "../../core/logger.js";
import { forwardable, HOP_BY_HOP, NEVER_REACHED, NOT_FORWARDED, scriptOfHost } from "./proxy.js";
import type { WorkersRuntime } from "./runtime.js";
import type { WorkerdProcess } from "./workerd-process.js";

/** WebSocket connections the edge carries at once, across scripts (each holds two sockets, so file descriptors). */
export const MAX_WEBSOCKETS = 10_000;

/** How long one side may take to finish sending once the other has closed, before it is cut. */
const CLOSE_GRACE_MS = 5_000;

/** A whole HTTP/1.1 answer for a socket no response object owns; the connection closes after it. */
function rawText(status: number, text: string): string {
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ""}\r\ncontent-type: text/plain; charset=utf-8\r\n` +
    `content-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`
  );
}

function headLines(headers: Record<string, string | string[]>): string {
  let out = "";
  for (const [k, v] of Object.entries(headers)) for (const one of Array.isArray(v) ? v : [v]) out += `${k}: ${one}\r\n`;
  return out;
}

/**
 * Joins two sockets both ways with backpressure (pipe), so neither direction buffers more than a socket's high-water
 * mark. When one side closes, the other is ended (what it still has to send is flushed) and cut after a grace; an
 * error on either destroys both. `done` runs once, when both are closed.
 */
function joinSockets(a: Duplex, b: Duplex, done: () => void): void {
  let closed = 0;
  const ended = (other: Duplex) => () => {
    if (!other.destroyed) {
      other.end();
      setTimeout(() => other.destroy(), CLOSE_GRACE_MS).unref();
    }
    if (++closed === 2) done();
  };
  const fail = () => {
    a.destroy();
    b.destroy();
  };
  a.on("error", fail);
  b.on("error", fail);
  a.once("close", ended(b));
  b.once("close", ended(a));
  a.pipe(b);
  b.pipe(a);
}

/**
 * Carries WebSocket upgrades for `<script>.<domain>` to the script's workerd: the request head goes to the live
 * process's socket (the same headers as any worker request, `cf-connecting-ip` set by us), the script's answer
 * comes back, and after a `101` the two connections are joined byte for byte. An answer other than 101 (the script
 * refused the upgrade) is relayed and the connection closed. The connection to workerd is counted on its process,
 * which closes it when a redeploy or a stop replaces the process (see WorkerdProcess.holdTunnel).
 */
export class WebSocketProxy {
  private open = 0;

  constructor(
    private readonly runtime: WorkersRuntime,
    private readonly domain: string,
    private readonly log: Logger,
    /** The Worker a request is for: by its Host under the workers domain, or by a route or Custom Domain. */
    private readonly scriptOf: (req: IncomingMessage) => string | undefined = (req) => scriptOfHost(req.headers.host, domain),
  ) {}

  /** How many WebSocket connections are open through the edge now. */
  get openConnections(): number {
    return this.open;
  }

  /** Takes a WebSocket upgrade for a worker's Host; false for anything else (another Host, another protocol). */
  handle(req: IncomingMessage, client: Duplex, head: Buffer): boolean {
    if (String(req.headers.upgrade).toLowerCase() !== "websocket") return false;
    const name = this.scriptOf(req);
    if (!name || String(req.headers.upgrade).toLowerCase() !== "websocket") return false;
    client.on("error", () => client.destroy());
    if (req.headers["transfer-encoding"] !== undefined || Number(req.headers["content-length"] ?? 0) > 0) {
      client.end(rawText(400, "A WebSocket upgrade request has no body\n"));
    } else if (this.open >= MAX_WEBSOCKETS) {
      client.end(rawText(503, `This platform carries ${MAX_WEBSOCKETS} WebSocket connections at most; try again later\n`));
    } else {
      void this.connect(name, req, client, head, true);
    }
    return true;
  }

  private async connect(name: string, req: IncomingMessage, client: Duplex, head: Buffer, retry: boolean): Promise<void> {
    const rt = this.runtime.lookup(name);
    if (!rt) return void client.end(rawText(404, `No worker is deployed at ${name}.${this.domain}\n`));
    // Normally immediate; waits only while a crashed workerd is restarted or a Durable Object version handed over.
    const proc = rt.live ?? (await rt.waitLive(10_000));
    if (client.destroyed) return;
    if (!proc) return void client.end(rawText(503, `Worker ${name} is not running; try again shortly\n`));
    this.upgradeOn(proc, name, req, client, head, retry);
  }

  private upgradeOn(proc: WorkerdProcess, name: string, req: IncomingMessage, client: Duplex, head: Buffer, retry: boolean): void {
    const headers = forwardable(req.headers, NOT_FORWARDED);
    headers.connection = "Upgrade";
    headers.upgrade = "websocket";
    headers["cf-connecting-ip"] = req.socket.remoteAddress ?? "";
    const up = request({ socketPath: proc.socketPath, agent: false, method: req.method, path: req.url ?? "/", headers });
    const clientGone = () => up.destroy();
    client.once("close", clientGone);
    up.on("upgrade", (res, upstream, upHead) => {
      client.off("close", clientGone);
      if (client.destroyed || !proc.holdTunnel(upstream)) {
        upstream.destroy();
        client.destroy();
        return;
      }
      // The script's 101 as workerd wrote it: its Sec-WebSocket-Accept, protocol and extensions are the handshake.
      let answer = `HTTP/1.1 101 ${res.statusMessage || "Switching Protocols"}\r\n`;
      for (let i = 0; i < res.rawHeaders.length; i += 2) answer += `${res.rawHeaders[i]}: ${res.rawHeaders[i + 1]}\r\n`;
      client.write(`${answer}\r\n`);
      if (upHead.length) client.write(upHead);
      if (head.length) upstream.write(head);
      this.open++;
      joinSockets(client, upstream, () => this.open--);
    });
    up.on("response", (res) => {
      // The script answered without switching protocols (e.g. 426, or a 400 of its own): relay it, then close.
      const relayed = { ...forwardable(res.headers, HOP_BY_HOP), connection: "close" };
      client.write(`HTTP/1.1 ${res.statusCode} ${res.statusMessage ?? ""}\r\n${headLines(relayed)}\r\n`);
      res.on("error", () => client.destroy());
      res.pipe(client);
    });
    up.on("error", (err: NodeJS.ErrnoException) => {
      client.off("close", clientGone);
      if (client.destroyed) return;
      // A redeploy or a crash removed the process (or its socket) just as it was used: nothing reached the script.
      if (retry && NEVER_REACHED.has(err.code ?? "")) return void this.connect(name, req, client, head, false);
      this.log.warn({ script: name, err: err.message, code: err.code }, "worker WebSocket upgrade failed");
      client.end(rawText(502, `Worker ${name} did not answer\n`));
    });
    up.end();
  }
}
