import { randomBytes, timingSafeEqual } from "node:crypto";
import { rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createNetServer, type Server as NetServer } from "node:net";
import { dirname, join } from "node:path";
import type { Duplex } from "node:stream";
import type { Logger } from "../../core/logger.js";
import { serveUpgradeAsRequest } from "../../core/http/upgrade.js";
import type { BindingBackendName } from "./binding-type.js";

/** The header workerd injects on every binding call (it replaces any header of that name the script sets). */
export const BINDING_HEADER = "x-edge-binding";

/** Removes the binding header from a call the platform passes on (a service binding's fetch, a script's subrequest). */
export function dropBindingHeader(req: IncomingMessage): void {
  delete req.headers[BINDING_HEADER];
  const raw = req.rawHeaders;
  for (let i = raw.length - 2; i >= 0; i -= 2) if (raw[i].toLowerCase() === BINDING_HEADER) raw.splice(i, 2);
}

/** What one binding's calls are for: a resource (a bucket, a namespace) of a backend, in the script's account. */
export interface BindingCall {
  backend: BindingBackendName;
  accountId: string;
  resource: string;
}

/** Serves one backend's binding protocol: answers a call workerd sent for `call`. */
export type BindingHandler = (call: BindingCall, req: IncomingMessage, res: ServerResponse) => void;

/**
 * Takes a script's own socket (connect()): a CONNECT to `target` (host:port) that came in on `accountId`'s socket
 * (see BindingServer.target), so it is that account's.
 */
export type AccountTunnelHandler = (target: string, socket: Duplex, head: Buffer, accountId: string) => void;

/** Takes a CONNECT workerd sent for `call` (a Cap'n Proto RPC session of a service binding): `socket` is the caller's connection, `head` what followed the request head. */
export type BindingTunnelHandler = (call: BindingCall, socket: Duplex, head: Buffer) => void;

/** Takes an HTTP upgrade (a WebSocket handshake) workerd sent for `call`: `socket` is workerd's connection. */
export type BindingUpgradeHandler = (call: BindingCall, req: IncomingMessage, socket: Duplex, head: Buffer) => void;

/**
 * The server workerd sends binding calls to (R2, KV), on a unix socket in a private directory. workerd
 * authenticates nothing, so each external service in a config carries `<secret>.<identity>` in an injected
 * header; the secret is random per platform process and lives only in memory and in the 0600 configs. A
 * request without it gets 403, so nothing else that reaches the socket can use it to reach the stores.
 *
 * workerd sends a script's connect() sockets to its global outbound as CONNECT requests with no header at all
 * (injectRequestHeaders and cfBlobHeader apply to requests, not to CONNECT), so the header cannot say whose they are.
 * The global outbound of each account's scripts is therefore sent to a socket of that account's own (`target`, backend
 * "outbound"): the socket a connection came in on is the label. It comes from the config the platform writes, not
 * from anything a script sends; a CONNECT on the shared socket that names no binding is refused.
 */
export class BindingServer {
  private readonly secret = randomBytes(32).toString("base64url");
  private readonly secretBytes = Buffer.from(this.secret);
  private server?: Server;
  private address = "";
  /**
   * Each account's socket for its scripts' global outbound (fetch() and connect()), made when its first script's
   * config is written and kept while the server runs: one listening descriptor per account with Workers.
   */
  private readonly accountSockets = new Map<string, { address: string; listener: NetServer }>();
  private accountSocketSeq = 0;
  /** The account of each connection that came in on an account's socket. */
  private readonly accountOfConnection = new WeakMap<Duplex, string>();

  private readonly handlers: Map<BindingBackendName, BindingHandler>;
  /** The backends that also take CONNECT tunnels (service bindings' RPC sessions). */
  private readonly tunnels: Map<BindingBackendName, BindingTunnelHandler>;
  /** The backends that take WebSocket handshakes (scripts' own fetch() with Upgrade: websocket). */
  private readonly upgrades = new Map<BindingBackendName, BindingUpgradeHandler>();

  constructor(
    handlers: ReadonlyMap<BindingBackendName, BindingHandler>,
    private readonly log: Logger,
    tunnels: ReadonlyMap<BindingBackendName, BindingTunnelHandler> = new Map(),
  ) {
    this.handlers = new Map(handlers);
    this.tunnels = new Map(tunnels);
  }

  /**
   * Adds a backend made after the server (the Worker's own assets, service bindings: they need the runtime that
   * owns this server), before the first script is deployed.
   */
  mount(backend: BindingBackendName, handler: BindingHandler, tunnel?: BindingTunnelHandler, upgrade?: BindingUpgradeHandler): void {
    this.handlers.set(backend, handler);
    if (tunnel) this.tunnels.set(backend, tunnel);
    if (upgrade) this.upgrades.set(backend, upgrade);
  }

  /** Listens on the unix socket at `socketPath`. */
  async start(socketPath: string): Promise<void> {
    // Scripts' own fetch() calls (backend "outbound") come in proxy style: the URL in the request line, no Host header.
    const server = createServer({ requireHostHeader: false }, (req, res) => this.dispatch(req, res));
    server.on("connect", (req: IncomingMessage, socket: Duplex, head: Buffer) => this.tunnel(req, socket, head));
    server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => this.upgrade(req, socket, head));
    // workerd keeps binding connections alive between calls; do not cut them sooner than it does.
    server.keepAliveTimeout = 120_000;
    server.headersTimeout = 121_000;
    server.requestTimeout = 0;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(socketPath, () => resolve());
    });
    this.server = server;
    this.address = `unix:${socketPath}`;
  }

  /**
   * Where workerd must send the calls of one binding (a workerd address, `unix:<path>`), and the header that names its
   * resource. `connectHost` carries the same value for workerd's CONNECT requests (an RPC session: workerd injects no
   * header into those, so the request target names the resource instead; it is a valid authority, base64url and dots).
   */
  target(call: BindingCall): { address: string; header: { name: string; value: string }; connectHost: string } {
    if (!this.address) throw new Error("binding server is not started");
    const id = Buffer.from(JSON.stringify(call)).toString("base64url");
    const value = `${this.secret}.${id}`;
    // A script's global outbound carries its connect() sockets, which no header labels: to its account's socket.
    const address = call.backend === "outbound" ? this.accountAddress(call.accountId) : this.address;
    return { address, header: { name: BINDING_HEADER, value }, connectHost: value };
  }

  /**
   * The address of `accountId`'s socket, listening from now on: beside the server's own, in the runtime's private
   * directory. Its connections are served as the server's own, labelled with the account. listen() binds a unix
   * socket at once; workerd connects to an external service only at its script's first subrequest.
   */
  private accountAddress(accountId: string): string {
    const known = this.accountSockets.get(accountId);
    if (known) return known.address;
    const path = join(dirname(this.address.slice("unix:".length)), `account-${++this.accountSocketSeq}.sock`);
    const listener = createNetServer((socket) => {
      if (!this.server) return void socket.destroy();
      this.accountOfConnection.set(socket, accountId);
      this.server.emit("connection", socket);
    });
    listener.on("error", (err) => this.log.error({ err, accountId, path }, "an account's outbound socket failed"));
    // The directory is the runtime's own, emptied at its start; a file left there would only make listen() fail.
    rmSync(path, { force: true });
    listener.listen(path);
    const entry = { address: `unix:${path}`, listener };
    this.accountSockets.set(accountId, entry);
    return entry.address;
  }

  get listenAddress(): string {
    return this.address;
  }

  /**
   * Header values already verified, with what they name. Only workerd sends valid ones and a config has a
   * handful, so this saves the secret check, base64 and JSON work on every call; the bound keeps memory flat.
   */
  private readonly verified = new Map<string, BindingCall>();

  private identify(h: string | string[] | undefined): BindingCall | undefined {
    if (typeof h !== "string") return undefined;
    const known = this.verified.get(h);
    if (known) return known;
    const dot = h.indexOf(".");
    if (dot < 0) return undefined;
    const given = Buffer.from(h.slice(0, dot));
    if (given.length !== this.secretBytes.length || !timingSafeEqual(given, this.secretBytes)) return undefined;
    let who: BindingCall;
    try {
      who = JSON.parse(Buffer.from(h.slice(dot + 1), "base64url").toString("utf8")) as BindingCall;
    } catch {
      return undefined;
    }
    if (this.verified.size >= 1024) this.verified.clear();
    this.verified.set(h, who);
    return who;
  }

  /**
   * What a request's binding header names, when it names it truly: on an account's socket, only that account's
   * scripts' calls arrive (workerd replaces any header of that name a script sets).
   */
  private caller(req: IncomingMessage): BindingCall | undefined {
    const who = this.identify(req.headers[BINDING_HEADER]);
    const account = this.accountOfConnection.get(req.socket);
    return who && (account === undefined || account === who.accountId) ? who : undefined;
  }

  private dispatch(req: IncomingMessage, res: ServerResponse): void {
    const who = this.caller(req);
    if (!who) {
      res.writeHead(403, { "content-type": "text/plain" }).end("forbidden\n");
      req.resume();
      return;
    }
    try {
      const handle = this.handlers.get(who.backend);
      // Only this process writes valid headers, so a backend it does not serve is a bug of ours.
      if (!handle) throw new Error(`no handler for binding backend ${who.backend}`);
      handle(who, req, res);
    } catch (err) {
      this.log.error({ err, binding: who.backend }, "binding call failed");
      if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
      res.end();
    }
  }

  /** Open CONNECT tunnels: the server's close() would wait for them, so stop() cuts them. */
  private readonly tunnelSockets = new Set<Duplex>();

  /** CONNECTs to anything else: scripts' own sockets (connect()), labelled by the account socket they came in on. */
  private accountTunnels?: AccountTunnelHandler;

  /** Where CONNECTs that name no binding go, on an account's socket (runtime/outbound.ts: public addresses only). */
  takeAccountTunnels(handler: AccountTunnelHandler): void {
    this.accountTunnels = handler;
  }

  private tunnel(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.tunnelSockets.add(socket);
    socket.once("close", () => this.tunnelSockets.delete(socket));
    const who = this.identify(req.url);
    const account = this.accountOfConnection.get(socket);
    if (!who && account !== undefined && this.accountTunnels) {
      socket.on("error", () => socket.destroy());
      return this.accountTunnels(req.url ?? "", socket, head, account);
    }
    const handle = who && this.tunnels.get(who.backend);
    if (!who || !handle) {
      socket.end("HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n", () => socket.destroy());
      return;
    }
    try {
      handle(who, socket, head);
    } catch (err) {
      this.log.error({ err, binding: who.backend }, "binding tunnel failed");
      socket.destroy();
    }
  }

  /**
   * A WebSocket handshake workerd sent: to its backend's upgrade handler. Backends without one are served it as the
   * plain request it was before there were any (core/http/upgrade.ts), as is one without a valid binding header.
   */
  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.tunnelSockets.add(socket);
    socket.once("close", () => this.tunnelSockets.delete(socket));
    const who = this.caller(req);
    const handle = who && this.upgrades.get(who.backend);
    if (!who || !handle) return serveUpgradeAsRequest(req, socket, (r, res) => this.dispatch(r, res));
    socket.on("error", () => socket.destroy());
    try {
      handle(who, req, socket, head);
    } catch (err) {
      this.log.error({ err, binding: who.backend }, "binding upgrade failed");
      socket.destroy();
    }
  }

  async stop(): Promise<void> {
    const s = this.server;
    if (!s) return;
    this.server = undefined;
    for (const { listener } of this.accountSockets.values()) listener.close();
    this.accountSockets.clear();
    for (const t of this.tunnelSockets) t.destroy();
    await new Promise<void>((resolve) => {
      s.close(() => resolve());
      s.closeIdleConnections();
    });
  }
}
