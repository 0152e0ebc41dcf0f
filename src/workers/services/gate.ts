import { request } from "node:http";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import type { Logger } from "../../core/logger.js";
import { dropBindingHeader, type BindingCall } from "../bindings/server.js";
import { RPC_CONNECT_HOST } from "../runtime/capnp-config.js";
import type { WorkerProxy } from "../runtime/proxy.js";
import type { WorkersRuntime } from "../runtime/runtime.js";
import type { WorkerdProcess } from "../runtime/workerd-process.js";
import { ServiceCallFailures } from "./errors.js";

/** How long a call waits for a bound Worker that is being restarted, as edge traffic does. */
const WAIT_LIVE_MS = 10_000;

/**
 * Where service binding calls cross from the calling Worker's workerd to the bound Worker's: the binding server hands
 * them here. The bound Worker is looked up when each call (or RPC session) starts, so a redeployed Worker is reached at
 * its new version, and only when it belongs to the caller's account (a name deleted and taken by another account is
 * never reached). Fetch calls go the way edge traffic goes (WorkerProxy); an RPC session is a byte tunnel from the
 * caller's CONNECT to a CONNECT on the bound process's "rpc" socket, cut when that process is stopped (workerd would
 * otherwise wait for the caller to close it).
 */
export class ServiceGate {
  constructor(
    private readonly runtime: WorkersRuntime,
    private readonly proxy: WorkerProxy,
    private readonly log: Logger,
  ) {}

  /** The bound Worker's runtime when it is a Worker of the caller's account. */
  private bound(call: BindingCall) {
    const rt = this.runtime.lookup(call.resource);
    return rt && rt.accountId === call.accountId ? rt : undefined;
  }

  /** A fetch call: forwarded to the bound Worker without the binding header (the bound Worker never sees it). */
  fetch(call: BindingCall, req: IncomingMessage, res: ServerResponse): void {
    dropBindingHeader(req);
    if (!this.bound(call)) {
      req.resume();
      const text = ServiceCallFailures.notDeployed(call.resource);
      res.writeHead(503, { "content-type": "text/plain; charset=utf-8", "content-length": Buffer.byteLength(text) }).end(text);
      return;
    }
    this.proxy.serve(call.resource, req, res);
  }

  /** An RPC session (workerd's CONNECT): tunnelled to the bound Worker's live process. */
  tunnel(call: BindingCall, socket: Duplex, head: Buffer): void {
    socket.pause();
    void this.openTunnel(call, socket, head).catch((err: unknown) => {
      this.log.warn({ service: call.resource, err: (err as Error).message }, "service binding RPC session failed");
      socket.destroy();
    });
  }

  private async openTunnel(call: BindingCall, socket: Duplex, head: Buffer): Promise<void> {
    // During a gradual deployment, the session goes to one of the two versions, by share.
    const rt = this.bound(call) && this.runtime.pick(call.resource);
    const proc = rt && (rt.live ?? (await rt.waitLive(WAIT_LIVE_MS)));
    if (!proc || socket.destroyed) {
      refuse(socket, rt ? ServiceCallFailures.notRunning(call.resource) : ServiceCallFailures.notDeployed(call.resource));
      return;
    }
    const upstream = await connectRpc(proc);
    const cut = () => {
      socket.destroy();
      upstream.destroy();
    };
    const unhook = proc.whenStopping(cut);
    socket.on("error", cut).on("close", cut);
    upstream.on("error", cut).on("close", () => {
      unhook();
      cut();
    });
    if (socket.destroyed) return cut();
    socket.write("HTTP/1.1 200 OK\r\n\r\n");
    if (head.length) upstream.write(head);
    socket.pipe(upstream);
    upstream.pipe(socket);
    socket.resume();
  }
}

function refuse(socket: Duplex, text: string): void {
  // Destroyed once written: workerd does not close a refused CONNECT's connection itself.
  socket.end(`HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(text)}\r\n\r\n${text}`, () =>
    socket.destroy(),
  );
}

/** Opens a Cap'n Proto session on the process's "rpc" socket: a CONNECT to the host its config names. */
function connectRpc(proc: WorkerdProcess): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: proc.socketOf("rpc"), method: "CONNECT", path: RPC_CONNECT_HOST, headers: { host: RPC_CONNECT_HOST } });
    req.once("connect", (res, upstream, upHead) => {
      if (res.statusCode !== 200) {
        upstream.destroy();
        reject(new Error(`workerd refused the RPC session (${res.statusCode})`));
        return;
      }
      if (upHead.length) upstream.unshift(upHead);
      resolve(upstream);
    });
    req.once("error", reject);
    req.end();
  });
}
