// An edge thread's work (src/edge-thread.ts composes it): accepts on the edge port's listening socket beside the main
// thread, serves the connections whose first request is for a proxied name no Worker is routed on (the proxy and the
// cache, from copies of the tenant state kept current with the main thread's notices), and hands every other
// connection to the main thread with its addresses (proxy-header.ts).
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from "node:http";
import { connect, type Socket } from "node:net";
import { closeSync, existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Duplex } from "node:stream";
import type { MessagePort } from "node:worker_threads";
import { optionValues } from "../../core/cli/option-values.js";
import type { CoreConfig } from "../../core/config.js";
import type { Db } from "../../core/db/sqlite.js";
import { ConnectionLimits } from "../../core/http/connection-limits.js";
import { passedRequestHeaders } from "../../core/http/relay.js";
import { StalledBodies } from "../../core/http/stalled-bodies.js";
import { answerAndClose, answerClientError, MAX_HEADER_BYTES, MAX_URL_BYTES, refuseLongUrl, refuseOnSocket } from "../../core/http/transport-errors.js";
import { serveUpgradeAsRequest } from "../../core/http/upgrade.js";
import type { Logger } from "../../core/logger.js";
import type { HttpRequestEvent } from "../analytics/http-requests.js";
import { cacheServeOptions, cacheShare, readCacheConfig } from "../cache/config.js";
import { CACHE_AREA, newEdgeCache, purgeNotices } from "../cache/service.js";
import { serveOptions as edgeOptions, type AreaHostnames } from "../config.js";
import type { EdgeRequestCounter } from "../metrics.js";
import type { EdgeZones } from "../ports.js";
import { OriginAddressPolicy } from "../origin/address-policy.js";
import { originServeOptions, readOriginConfig } from "../origin/config.js";
import { OriginForwarder } from "../origin/forwarder.js";
import { OriginPools } from "../origin/pools.js";
import { TenantResolver } from "../origin/tenant-resolver.js";
import { CacheRulesets } from "../rules/cache-rules.js";
import { SqliteCacheRulesStore } from "../rules/sqlite-store.js";
import { SqliteZoneSettingsStore } from "../settings/sqlite-store.js";
import { ZoneSettings } from "../settings/zone-settings.js";
import { createEdgeService } from "../service.js";
import type { PlatformHostnames } from "../../core/service.js";
import { peekHost } from "./host-peek.js";
import type { CountedRequest, FromThread, ThreadStart, ToThread } from "./messages.js";
import { proxyLine } from "./proxy-header.js";
import type { ThreadBus } from "./thread-bus.js";

/** DNS's zones as the thread keeps them (dns/replica.ts, handed over by src/edge-thread.ts). */
export interface ThreadZones extends Omit<EdgeZones, "onDeleted"> {
  zoneOf(host: string): { id: string; name: string; accountId: string } | undefined;
  isPlatformAddress(ip: string): boolean;
  load(): Promise<void>;
  stop(): void;
}

/** Workers' routes as the thread keeps them (workers/routing/replica.ts): only whether a Worker may take a host. */
export interface ThreadRoutes {
  mayMatch(host: string | undefined): boolean;
  generation(): number;
  load(): Promise<void>;
  stop(): void;
}

export interface EdgeThreadDeps {
  start: ThreadStart;
  port: MessagePort;
  bus: ThreadBus;
  log: Logger;
  core: CoreConfig;
  /** The hostname plan's names of the other areas (their options). */
  names: AreaHostnames;
  /** Made with the thread's hostname plan (the zones check tenants' names against it). */
  zones: (platformHostnames: PlatformHostnames) => ThreadZones;
  /** Made after `zones` (the routes are read against them). */
  routes: () => ThreadRoutes;
  /** Opens one of the embedded state's databases, read only. */
  openDb: (name: string) => Db;
}

/** Traffic events are sent to the main thread this often (a thread that dies loses at most this much of its counts). */
const TRAFFIC_FLUSH_MS = 1_000;
/** The most traffic events held between flushes (past it they are sent at once). */
const TRAFFIC_BATCH = 2_000;
/**
 * The most of a connection's first bytes a thread reads to find its Host: a head longer than this (large cookies) goes
 * to the main thread, which reads heads up to MAX_HEADER_BYTES.
 */
const PEEK_LIMIT = 16 * 1024;
/** A relayed message's fields without the hop-by-hop ones (relay.ts's one policy): Node frames it again on each side. */
const endToEnd = (raw: readonly string[]): string[] => passedRequestHeaders(raw, NOTHING_DROPPED, []);
const NOTHING_DROPPED: ReadonlySet<string> = new Set();

/** Left in a thread's cache share by its clean stop: the share may be kept at the next start. */
const CLEAN_STOP_MARKER = ".clean-stop";

/** A connection whose first head has not arrived in this long is handed to the main thread (its head timeout applies there). */
const PEEK_WAIT_MS = 10_000;
/** How long a stopping thread lets its requests finish. */
const STOP_GRACE_MS = 5_000;

/** Runs the thread until the main thread says stop (then the thread exits). */
export function serveEdgeThread(deps: EdgeThreadDeps): void {
  const { start, port, bus, log, core } = deps;
  const send = (message: FromThread) => port.postMessage(message);
  const options = start.options;
  port.on("message", (message: ToThread) => {
    if (message.type === "notice") bus.deliver(message.n, message.event);
    else if (message.type === "drain") void drain();
    else if (message.type === "stop") void stop();
  });

  // Requests that ended, for the main thread's analytics (tenants') and metrics (all).
  let traffic: HttpRequestEvent[] = [];
  let counted: CountedRequest[] = [];
  let open = { plain: 0, tls: 0 };
  const flushTraffic = () => {
    // Those carried to the main thread are counted there (the gauge sums the loops).
    const all = connections.openConnections;
    const now = { plain: Math.max(0, all.plain - spliced.size), tls: all.tls };
    if (traffic.length === 0 && counted.length === 0 && now.plain === open.plain && now.tls === open.tls) return;
    open = now;
    send({ type: "traffic", events: traffic, requests: counted, open });
    traffic = [];
    counted = [];
  };
  const requests: EdgeRequestCounter = {
    record(area, status, zone, seconds, bytes, cacheStatus) {
      counted.push([area, status, zone, seconds, bytes, cacheStatus]);
      if (counted.length >= TRAFFIC_BATCH) flushTraffic();
    },
  };
  const flushTimer = setInterval(flushTraffic, TRAFFIC_FLUSH_MS);

  // The hostname plan, as the main thread has it.
  const edge = createEdgeService(optionValues(options, edgeOptions), deps.names, requests);

  // The tenant state, subscribed before it is read (a change between the read and the subscription is not missed).
  const zones = deps.zones(edge.platformHostnames);
  const routes = deps.routes();
  const edgeZones: EdgeZones = {
    accountOf: (zoneId) => zones.accountOf(zoneId),
    nameOf: (zoneId) => zones.nameOf(zoneId),
    // The main thread removes a deleted zone's settings, rules and cache (its purge reaches this thread as a notice).
    onDeleted: () => undefined,
    originOf: (host) => zones.originOf(host),
    generation: () => zones.generation(),
  };
  const settings = new ZoneSettings(new SqliteZoneSettingsStore(deps.openDb("edge-settings")), log);
  const rules = new CacheRulesets(new SqliteCacheRulesStore(deps.openDb("edge-rules")), log);

  const cacheConfig = cacheShare(readCacheConfig(optionValues(options, cacheServeOptions), start.stateDir), start.index, start.loops);
  // A share is kept only from a clean stop of its thread (the marker): a thread that ended otherwise (a crash, left
  // down, the process killed) missed the purges made since, so its share starts empty.
  const cleanStop = join(cacheConfig.dir, CLEAN_STOP_MARKER);
  if (start.restarted || !existsSync(cleanStop)) rmSync(cacheConfig.dir, { recursive: true, force: true });
  else rmSync(cleanStop, { force: true });
  const cache = newEdgeCache(cacheConfig, settings, log, rules);
  const origin = readOriginConfig(optionValues(options, originServeOptions));
  const pools = new OriginPools({ connectTimeoutMs: origin.originConnectTimeoutMs, answerTimeoutMs: origin.originTimeoutMs, extraCa: origin.originCa });
  const forwarder = new OriginForwarder({
    zones: edgeZones,
    settings,
    policy: new OriginAddressPolicy(origin.originAllow, (ip) => zones.isPlatformAddress(ip)),
    pools,
    resolver: new TenantResolver(origin.originResolvers, origin.originConnectTimeoutMs),
    cache,
    connectTimeoutMs: origin.originConnectTimeoutMs,
    answerTimeoutMs: origin.originTimeoutMs,
    log,
  });

  /**
   * Whether this thread has applied every notice the main thread relayed: the counter is shared, so a notice counts
   * from the moment it was sent, not from when this thread's loop gets to its message. Until then the thread hands
   * everything to the main thread, which is always current (a reload of a large zone may take seconds).
   */
  const current = () => bus.current(start.relayed);

  // Requests that reach the thread but are not its own (a later request of a kept-alive connection for the API, a
  // Worker's route, or any while the thread is behind): each goes to the main thread on a connection of its own with
  // the client's addresses, one at a time per client connection (pipelined ones wait their turn).
  const toMain = (socket: Socket | Duplex) => {
    const upstream = connect(start.handoverPath);
    const s = socket as Socket;
    upstream.write(
      proxyLine({
        remoteAddress: s.remoteAddress ?? "0.0.0.0",
        remotePort: s.remotePort ?? 0,
        localAddress: s.localAddress ?? "0.0.0.0",
        localPort: s.localPort ?? 0,
      }),
    );
    return upstream;
  };
  const relaying = new WeakMap<object, Promise<void>>();
  // No agent: `createConnection` is the connection (an agent, `agent: false` included, would make its own).
  const relayRequest = (req: IncomingMessage, res: ServerResponse): boolean => {
    const key = req.socket;
    const previous = relaying.get(key) ?? Promise.resolve();
    const done = previous.then(
      () =>
        new Promise<void>((resolve) => {
          // A queued answer of a connection that closed meanwhile never gets a socket (nor a close event): nothing to do.
          if (res.destroyed || req.destroyed || req.socket?.destroyed) return resolve();
          res.once("close", () => resolve());
          req.socket.once("close", () => resolve());
          const headers = endToEnd(req.rawHeaders);
          // A body Node framed as chunked: said again, or Node's client would send it unframed for a GET or DELETE.
          if (req.headers["transfer-encoding"] !== undefined && req.headers["content-length"] === undefined) headers.push("transfer-encoding", "chunked");
          const upstream = httpRequest({ createConnection: () => toMain(req.socket), method: req.method, path: req.url, headers });
          upstream.on("response", (answer) => {
            const head = endToEnd(answer.rawHeaders);
            // The main thread ends the connection after this answer (a refusal, a stop): so does the thread.
            if (/(^|,)\s*close\s*(,|$)/i.test(String(answer.headers.connection ?? ""))) head.push("connection", "close");
            res.writeHead(answer.statusCode ?? 502, answer.statusMessage, head);
            answer.pipe(res);
          });
          upstream.on("error", () => res.destroy());
          res.on("close", () => upstream.destroy());
          req.pipe(upstream);
        }),
    );
    relaying.set(key, done);
    return true;
  };
  const relayUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): boolean => {
    const upstream = toMain(socket);
    const lines = [`${req.method} ${req.url} HTTP/${req.httpVersion}`];
    for (let i = 0; i < req.rawHeaders.length; i += 2) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
    upstream.write(lines.join("\r\n") + "\r\n\r\n");
    if (head.length > 0) upstream.write(head);
    splice(socket, upstream);
    return true;
  };

  edge.attach({
    zoneOf: (host) => zones.zoneOf(host),
    zonesGeneration: () => zones.generation(),
    traffic: (event) => {
      traffic.push(event);
      if (traffic.length >= TRAFFIC_BATCH) flushTraffic();
    },
    handlers: {
      workers: relayRequest,
      // Hosts of the workers domain are the platform's, never this thread's: only routes and Custom Domains matter here.
      workersMayServe: (host) => routes.mayMatch(host),
      workersGeneration: () => routes.generation(),
      workerUpgrade: relayUpgrade,
      tailUpgrade: relayUpgrade,
      gateway: relayRequest,
      s3: relayRequest,
    },
  });
  edge.addTenantHandler((req, res) => forwarder.handle(req, res));
  edge.addTenantUpgradeHandler((req, socket, head) => forwarder.handleUpgrade(req, socket, head));
  const dispatch = edge.dispatch;
  /** Whether the thread answers a request with this Host itself (else the main thread does). */
  const ours = (host: string | undefined) => current() && dispatch.tenantWithoutWorkers(host);

  // The HTTP server of the connections this thread serves, listening on the thread's descriptor itself (so Node keeps
  // its connections' head and keep-alive timers, and a stop can close its idle ones): the main thread's edge server's
  // rules (app.ts), with its share of the connection limits; every new connection passes `accepted` first.
  const loops = start.loops;
  const connections = new ConnectionLimits({
    max: Math.ceil(core.connections.max / loops),
    perClientMax: Math.ceil(core.connections.perClientMax / loops),
    perClientExempt: core.connections.perClientExempt,
  });
  const stalledBodies = new StalledBodies({ idleMs: core.bodyIdleMs, minBytesPerSecond: core.bodyMinBytesPerSecond });
  const listener = (req: IncomingMessage, res: ServerResponse) => {
    const refusal = connections.refusalFor(req.socket);
    if (refusal) return answerAndClose(res, refusal);
    // A later request of a kept-alive connection for a host that is not the thread's: the main thread answers and
    // counts it, as it would have answered the connection.
    if (!ours(req.headers.host)) return void relayRequest(req, res);
    if (refuseLongUrl(req, res)) return;
    stalledBodies.watch(req, res);
    if (dispatch.request(req, res)) return;
    relayRequest(req, res);
  };
  const http = createServer({ maxHeaderSize: MAX_HEADER_BYTES, connectionsCheckingInterval: Math.min(Math.max(core.headTimeoutMs / 4, 50), 30_000) }, listener);
  connections.install(http);
  const [serveConnection] = http.listeners("connection") as ((socket: Socket) => void)[];
  http.removeAllListeners("connection");
  http.on("connection", (socket: Socket) => accepted(socket, serveConnection));
  http.on("clientError", answerClientError);
  http.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const refusal = connections.refusalFor(req.socket);
    if (refusal) return refuseOnSocket(socket, refusal);
    if (!ours(req.headers.host)) return void relayUpgrade(req, socket, head);
    if ((req.url?.length ?? 0) <= MAX_URL_BYTES && dispatch.upgrade(req, socket, head)) return;
    serveUpgradeAsRequest(req, socket, listener);
  });
  http.keepAliveTimeout = 65_000;
  http.headersTimeout = core.headTimeoutMs;
  http.requestTimeout = 0;

  /** Connections whose first head is being read (no HTTP server has them yet: a stop closes them itself). */
  const peeking = new Set<Socket>();
  /** Connections carried to the main thread byte for byte (a stop lets them finish, bounded). */
  const spliced = new Set<Duplex>();
  /** Both ways until either side ends; an error on one ends the other. */
  function splice(a: Duplex, b: Duplex): void {
    spliced.add(a);
    a.pipe(b);
    b.pipe(a);
    const end = () => {
      spliced.delete(a);
      a.destroy();
      b.destroy();
    };
    a.on("error", end);
    b.on("error", end);
    a.on("close", end);
    b.on("close", end);
  }

  /**
   * A new connection: its first head decides. The thread serves it when its Host is a tenant's no Worker may take
   * (and the thread is current); otherwise the main thread gets it whole, the bytes read so far first, after the
   * PROXY line with its addresses. What is read is copied into one buffer of PEEK_LIMIT bytes at most.
   */
  function accepted(socket: Socket, serve: (socket: Socket) => void): void {
    // Counted from accept under the thread's share (a connection past it is closed at once, as the HTTPS port does):
    // a connection is never uncounted while its first head is read.
    if (stopping || !connections.admitAtAccept(socket, false)) return void socket.destroy();
    let peek: Buffer | undefined;
    let length = 0;
    peeking.add(socket);
    const timer = setTimeout(() => decide("none", []), PEEK_WAIT_MS);
    const onData = (chunk: Buffer) => {
      // The head's bytes are looked at up to PEEK_LIMIT; the rest of a large first read (a body) is passed on as it is.
      const room = PEEK_LIMIT - length;
      const head = chunk.length > room ? chunk.subarray(0, room) : chunk;
      const rest = chunk.length > room ? [chunk.subarray(room)] : [];
      peek ??= Buffer.allocUnsafe(PEEK_LIMIT);
      head.copy(peek, length);
      const from = Math.max(0, length - 3);
      length += head.length;
      // Only the new bytes (and the three before them) are searched: a head trickled a byte at a time costs linear time.
      if (peek.subarray(from, length).includes("\r\n\r\n") || from === 0 || rest.length > 0) {
        const peeked = peekHost(peek.subarray(0, length), PEEK_LIMIT);
        if (peeked !== "more") decide(peeked, rest);
        else if (rest.length > 0) decide("none", rest);
      }
    };
    const onEnd = () => decide("none", []);
    const decide = (peeked: { host: string } | "none", after: Buffer[]) => {
      clearTimeout(timer);
      peeking.delete(socket);
      socket.removeListener("data", onData);
      socket.removeListener("end", onEnd);
      socket.removeListener("error", onEnd);
      if (socket.destroyed) return;
      const seen = Buffer.concat([peek?.subarray(0, length) ?? Buffer.alloc(0), ...after]);
      if (peeked !== "none" && ours(peeked.host)) {
        connections.handOver(socket);
        serve.call(http, socket);
        // Node's parser reads the socket from now on; what was read here goes to it first, in this same turn.
        socket.emit("data", seen);
        return;
      }
      const upstream = toMain(socket);
      if (seen.length > 0) upstream.write(seen);
      splice(socket, upstream);
    };
    socket.on("data", onData);
    socket.on("end", onEnd);
    socket.on("error", onEnd);
  }

  let stopping = false;
  let drained: Promise<void> | undefined;
  /** Accepts nothing more and finishes what it serves (bounded); notices are still applied meanwhile. */
  function drain(): Promise<void> {
    if (drained) return drained;
    stopping = true;
    forwarder.closeUpgraded();
    // Nothing has been asked on them yet.
    for (const socket of peeking) socket.destroy();
    const grace = setTimeout(() => {
      http.closeAllConnections();
      for (const socket of spliced) socket.destroy();
    }, STOP_GRACE_MS);
    drained = (async () => {
      // No new connection; idle kept-alive ones closed now, the others once their answer is done (bounded by the grace).
      const closed = new Promise<void>((resolve) => (http.listening ? http.close(() => resolve()) : resolve()));
      http.closeIdleConnections();
      await closed;
      // Connections carried to the main thread (a Worker's WebSocket, an upload to the API) end as the main thread
      // closes them (it stops beside this), within the grace.
      while (spliced.size > 0) await new Promise((r) => setTimeout(r, 50));
      clearTimeout(grace);
      send({ type: "drained" });
    })();
    return drained;
  }

  /** Once the main thread's API is closed (every change relayed and applied here): the cache closes, clean, and the thread ends. */
  async function stop(): Promise<void> {
    await drain();
    clearInterval(flushTimer);
    flushTraffic();
    zones.stop();
    routes.stop();
    settings.stop();
    rules.stop();
    stalledBodies.close();
    cache.close();
    try {
      writeFileSync(cleanStop, "");
    } catch {
      // No marker: the share starts empty next time, which is always correct.
    }
    await pools.close();
    process.exit(0);
  }

  // The state first, subscribed before it is read (a change between the read and the subscription is not missed).
  // A reload that failed would leave this thread's copy old: it starts again instead (and reads everything).
  const reloadFailed = (err: unknown) => {
    log.error({ err }, "edge thread's copy of the tenant state not read again: the thread starts again");
    process.exit(1);
  };
  settings.follow(bus, reloadFailed);
  rules.follow(bus, reloadFailed);
  bus.subscribe(CACHE_AREA, purgeNotices(cache, start.nodeId, log));
  void (async () => {
    await zones.load();
    await settings.load();
    await rules.load();
    await routes.load();
    // Asked to stop while it read: it never listens (its copy of the descriptor is closed with it).
    if (stopping) {
      closeSync(start.fd);
      return void send({ type: "drained" });
    }
    http.listen({ fd: start.fd }, () => {
      if (core.sealObjectPrototype) Object.seal(Object.prototype);
      send({ type: "ready" });
    });
  })().catch((err: unknown) => {
    log.error({ err }, "edge thread could not start");
    // The descriptor is this thread's own copy (core/os/os.ts): closed here when no handle took it over.
    if (!http.listening) closeSync(start.fd);
    process.exit(1);
  });
}
