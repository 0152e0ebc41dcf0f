import { request, STATUS_CODES, type IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import type { Logger } from "../../core/logger.js";
import { forwardable, HOP_BY_HOP, NEVER_REACHED, NOT_FORWARDED, scriptOfHost, setEdgeRequestHeaders } from "./proxy.js";
import type { WorkersRuntime } from "./runtime.js";
import type { WorkerdProcess } from "./workerd-process.js";

/** How long one side may take to finish sending once the other has closed, before it is cut. */
const CLOSE_GRACE_MS = 5_000;
/** How long a client has, once the platform stopping sent it close 1001, before its connection is cut. */
const STOP_GRACE_MS = 2_000;

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
 * Follows the frames one side sends (RFC 6455 §5.2) without decoding them: only the headers are read, payloads are
 * skipped by length, so it costs nothing per payload byte. It tells when the side sent a close frame, and whether
 * what went through so far ends on a frame boundary (where the edge may put a frame of its own).
 */
class FrameWatcher {
  /** Header bytes of a frame whose header has not wholly arrived (at most 14). */
  private readonly head: number[] = [];
  /** Payload bytes of the current frame still to come. */
  private left = 0;
  sentClose = false;

  get atBoundary(): boolean {
    return this.left === 0 && this.head.length === 0;
  }

  see(chunk: Buffer): void {
    let i = 0;
    while (i < chunk.length) {
      if (this.left > 0) {
        const n = Math.min(this.left, chunk.length - i);
        this.left -= n;
        i += n;
        continue;
      }
      this.head.push(chunk[i++]!);
      if (this.head.length < 2) continue;
      const len7 = this.head[1]! & 0x7f;
      const need = 2 + (len7 === 126 ? 2 : len7 === 127 ? 8 : 0) + (this.head[1]! & 0x80 ? 4 : 0);
      if (this.head.length < need) continue;
      const h = Buffer.from(this.head);
      if ((h[0]! & 0x0f) === 0x8) this.sentClose = true;
      this.left = len7 === 126 ? h.readUInt16BE(2) : len7 === 127 ? Number(h.readBigUInt64BE(2)) : len7;
      this.head.length = 0;
    }
  }
}

/** A close frame from the edge to the client (unmasked, as a server sends): `code` and a short UTF-8 reason. */
function closeFrame(code: number, reason: string): Buffer {
  const text = Buffer.from(reason);
  const frame = Buffer.alloc(4 + text.length);
  frame[0] = 0x88; // FIN, opcode close
  frame[1] = 2 + text.length; // reasons here are short: the 7-bit length suffices (at most 125)
  frame.writeUInt16BE(code, 2);
  text.copy(frame, 4);
  return frame;
}

/** A joined WebSocket connection, as the proxy needs to end it when the platform stops. */
interface Tunnel {
  /** Sends the client close 1001 (going away) where a frame may go, and cuts both sockets after STOP_GRACE_MS. */
  goAway(): void;
}

/**
 * Joins the client's connection and workerd's both ways with backpressure (pipe), so neither direction buffers more
 * than a socket's high-water mark. Any sign that the connection is ending gives both sides CLOSE_GRACE_MS to finish,
 * then both sockets are destroyed: a close frame from either side (the closing handshake a peer may never answer, as
 * a script that ignores `close` does not), either side ending its half (TCP FIN), or either socket closing (the other
 * is ended first, so what it still has to send is flushed). An error on either destroys both. Without the bound a
 * client's close that the script ignored left the edge's socket half-closed (CLOSE-WAIT) and holding its slot forever.
 */
function joinSockets(client: Duplex, upstream: Duplex, already: { fromClient: Buffer; fromScript: Buffer }): Tunnel {
  const fromClient = new FrameWatcher();
  const fromScript = new FrameWatcher();
  // Bytes that crossed before the join (the upgrade's head, early bytes) are frames too: the count starts with them.
  fromClient.see(already.fromClient);
  fromScript.see(already.fromScript);
  let cut: NodeJS.Timeout | undefined;
  const destroyBoth = () => {
    client.destroy();
    upstream.destroy();
  };
  const cutWithin = (ms: number) => {
    if (cut) return;
    cut = setTimeout(destroyBoth, ms);
    cut.unref();
  };
  const closeSeen = (watcher: FrameWatcher) => (chunk: Buffer) => {
    watcher.see(chunk);
    if (watcher.sentClose) cutWithin(CLOSE_GRACE_MS);
  };
  const closed = (other: Duplex) => () => {
    if (!other.destroyed) other.end();
    cutWithin(CLOSE_GRACE_MS);
  };
  client.on("error", destroyBoth);
  upstream.on("error", destroyBoth);
  client.on("data", closeSeen(fromClient));
  upstream.on("data", closeSeen(fromScript));
  // With `end` the pipe below ends the other side's writing half; the grace bounds how long that side may keep its own.
  client.once("end", () => cutWithin(CLOSE_GRACE_MS));
  upstream.once("end", () => cutWithin(CLOSE_GRACE_MS));
  client.once("close", closed(upstream));
  upstream.once("close", closed(client));
  client.pipe(upstream);
  upstream.pipe(client);
  return {
    goAway() {
      if (client.destroyed) return;
      // Mid-frame from the script, a frame of ours would corrupt the stream: then the connection is cut outright.
      if (!fromScript.atBoundary || fromScript.sentClose) return destroyBoth();
      upstream.unpipe(client);
      client.end(closeFrame(1001, "the platform is stopping"));
      upstream.end();
      if (cut) clearTimeout(cut);
      cut = undefined;
      cutWithin(STOP_GRACE_MS);
    },
  };
}

/** Most bytes a client may send before the script's 101 (a WebSocket client sends nothing before it). */
const MAX_EARLY_BYTES = 64 * 1024;

/**
 * Reads the client's connection while the script has not answered its upgrade: a socket nobody reads never sees the
 * client leave, so an upgrade the script never answers would hold its slot (and both connections) forever. What the
 * client sends meanwhile is kept, up to MAX_EARLY_BYTES, and handed over by `stop()`, which ends the reading.
 */
function watchWhilePending(client: Duplex): { stop(): Buffer } {
  const early: Buffer[] = [];
  let bytes = 0;
  const onData = (chunk: Buffer) => {
    bytes += chunk.length;
    if (bytes > MAX_EARLY_BYTES) client.destroy();
    else early.push(chunk);
  };
  // The client ended its side: it is gone (an upgrade is never half-closed on purpose).
  const onEnd = () => client.destroy();
  client.on("data", onData);
  client.once("end", onEnd);
  return {
    stop() {
      client.off("data", onData);
      client.off("end", onEnd);
      client.pause();
      return Buffer.concat(early);
    },
  };
}

/** How many WebSocket connections the edge carries at once: in all (each holds two sockets, so file descriptors) and per account. */
export interface WebSocketLimits {
  max: number;
  perAccountMax: number;
}

/**
 * Carries WebSocket upgrades for `<script>.<domain>` to the script's workerd: the request head goes to the live
 * process's socket (the same headers as any worker request, `cf-connecting-ip` set by us), the script's answer
 * comes back, and after a `101` the two connections are joined byte for byte. An answer other than 101 (the script
 * refused the upgrade) is relayed and the connection closed. The connection to workerd is counted on its process,
 * which closes it when a redeploy or a stop replaces the process (see WorkerdProcess.holdTunnel).
 *
 * A connection holds a slot, in all and for the script's account, from the moment it goes to workerd until the
 * client's connection closes: while the script delays its 101 as well as once joined, so neither a script that never
 * answers nor one account's clients can take every slot.
 */
export class WebSocketProxy {
  private open = 0;
  /** Slots held per account (only accounts holding one are present). */
  private readonly byAccount = new Map<string, number>();
  /** Every client connection holding a slot, with its tunnel once joined (undefined while the script has not answered). */
  private readonly tunnels = new Map<Duplex, Tunnel | undefined>();
  private stopping = false;

  constructor(
    private readonly runtime: WorkersRuntime,
    private readonly domain: string,
    private readonly limits: WebSocketLimits,
    private readonly log: Logger,
    /** The Worker a request is for: by its Host under the workers domain, or by a route or Custom Domain. */
    private readonly scriptOf: (req: IncomingMessage) => string | undefined = (req) => scriptOfHost(req.headers.host, domain),
  ) {}

  /** How many WebSocket connections the edge holds now (joined, or waiting for the script's answer). */
  get openConnections(): number {
    return this.open;
  }

  /**
   * Ends every WebSocket connection, for a platform that stops: the edge port's close waits for its connections, and
   * a WebSocket has no end of its own. A joined one is sent close 1001 (going away) and cut after STOP_GRACE_MS; one
   * whose upgrade the script has not answered yet is cut now. Upgrades that arrive afterwards are refused with a 503.
   */
  closeAll(): void {
    this.stopping = true;
    for (const [client, tunnel] of this.tunnels) {
      if (tunnel) tunnel.goAway();
      else client.destroy();
    }
  }

  /** Takes a WebSocket upgrade for a worker's Host; false for anything else (another Host, another protocol). */
  handle(req: IncomingMessage, client: Duplex, head: Buffer): boolean {
    if (String(req.headers.upgrade).toLowerCase() !== "websocket") return false;
    const name = this.scriptOf(req);
    if (!name) return false;
    client.on("error", () => client.destroy());
    if (this.stopping) {
      client.end(rawText(503, "This platform is stopping\n"));
    } else if (req.headers["transfer-encoding"] !== undefined || Number(req.headers["content-length"] ?? 0) > 0) {
      client.end(rawText(400, "A WebSocket upgrade request has no body\n"));
    } else if (this.open >= this.limits.max) {
      client.end(rawText(503, `This platform carries ${this.limits.max} WebSocket connections at most; try again later\n`));
    } else {
      void this.admit(name, req, client, head);
    }
    return true;
  }

  /** The first attempt: the script's process, then a slot for its account, then the upgrade. */
  private async admit(name: string, req: IncomingMessage, client: Duplex, head: Buffer): Promise<void> {
    const live = await this.liveProcess(name, req, client);
    if (!live) return;
    const account = live.accountId;
    const held = this.byAccount.get(account) ?? 0;
    if (this.stopping) return void client.end(rawText(503, "This platform is stopping\n"));
    // Checked again: other upgrades may have taken slots while this one waited for a process.
    if (this.open >= this.limits.max) {
      return void client.end(rawText(503, `This platform carries ${this.limits.max} WebSocket connections at most; try again later\n`));
    }
    if (held >= this.limits.perAccountMax) {
      return void client.end(
        rawText(429, `The account of worker ${name} has ${held} WebSocket connections open, the most one account may hold here; try again later\n`),
      );
    }
    this.open++;
    this.byAccount.set(account, held + 1);
    this.tunnels.set(client, undefined);
    client.once("close", () => {
      this.tunnels.delete(client);
      this.open--;
      const left = this.byAccount.get(account)! - 1;
      if (left) this.byAccount.set(account, left);
      else this.byAccount.delete(account);
    });
    this.upgradeOn(live.proc, name, req, client, head, true);
  }

  /** A second attempt after the process went away as it was used (the slot taken by admit() is still held). */
  private async retry(name: string, req: IncomingMessage, client: Duplex, head: Buffer): Promise<void> {
    const live = await this.liveProcess(name, req, client);
    if (live) this.upgradeOn(live.proc, name, req, client, head, false);
  }

  /** The script's live process and its account, or undefined once the client was told why there is none. */
  private async liveProcess(name: string, req: IncomingMessage, client: Duplex): Promise<{ proc: WorkerdProcess; accountId: string } | undefined> {
    // During a gradual deployment, one of the two versions (by share, or the request's version override).
    const rt = this.runtime.pick(name, req.headers);
    if (!rt) return void client.end(rawText(404, `No worker is deployed at ${name}.${this.domain}\n`));
    // Normally immediate; waits only while a crashed workerd is restarted or a Durable Object version handed over.
    const proc = rt.live ?? (await rt.waitLive(10_000));
    if (client.destroyed) return undefined;
    if (!proc) return void client.end(rawText(503, `Worker ${name} is not running; try again shortly\n`));
    // A live process runs a version, which belongs to an account; the script name stands in only if none is known yet.
    return { proc, accountId: rt.accountId ?? `script:${name}` };
  }

  private upgradeOn(proc: WorkerdProcess, name: string, req: IncomingMessage, client: Duplex, head: Buffer, retry: boolean): void {
    const headers = forwardable(req.headers, NOT_FORWARDED);
    headers.connection = "Upgrade";
    headers.upgrade = "websocket";
    setEdgeRequestHeaders(headers, req);
    const up = request({ socketPath: proc.socketPath, agent: false, method: req.method, path: req.url ?? "/", headers });
    const pending = watchWhilePending(client);
    const clientGone = () => up.destroy();
    client.once("close", clientGone);
    up.on("upgrade", (res, upstream, upHead) => {
      client.off("close", clientGone);
      const early = pending.stop();
      if (client.destroyed || this.stopping || !proc.holdTunnel(upstream)) {
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
      if (early.length) upstream.write(early);
      const tunnel = joinSockets(client, upstream, { fromClient: Buffer.concat([head, early]), fromScript: upHead });
      this.tunnels.set(client, tunnel);
    });
    up.on("response", (res) => {
      // The script answered without switching protocols (e.g. 426, or a 400 of its own): relay it, then close.
      // What the client still sends is read and dropped (pending's listener stays) and it is cut after a grace.
      const relayed = { ...forwardable(res.headers, HOP_BY_HOP), connection: "close" };
      client.write(`HTTP/1.1 ${res.statusCode} ${res.statusMessage ?? ""}\r\n${headLines(relayed)}\r\n`);
      res.on("error", () => client.destroy());
      res.once("end", () => setTimeout(() => client.destroy(), CLOSE_GRACE_MS).unref());
      res.pipe(client);
    });
    up.on("error", (err: NodeJS.ErrnoException) => {
      client.off("close", clientGone);
      const early = pending.stop();
      if (client.destroyed) return;
      // A redeploy or a crash removed the process (or its socket) just as it was used: nothing reached the script.
      if (retry && NEVER_REACHED.has(err.code ?? "")) return void this.retry(name, req, client, Buffer.concat([head, early]));
      this.log.warn({ script: name, err: err.message, code: err.code }, "worker WebSocket upgrade failed");
      client.end(rawText(502, `Worker ${name} did not answer\n`));
    });
    up.end();
  }
}
