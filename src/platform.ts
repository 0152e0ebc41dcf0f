import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { AddressInfo } from "node:net";
import type { FastifyInstance } from "fastify";
import { AuthService } from "./core/auth/auth-service.js";
import { bootstrapIdentity, CREDENTIALS_FILE, type BootstrapResult } from "./core/auth/bootstrap.js";
import { IDENTITY_PG_MIGRATIONS } from "./core/auth/pg-migrations.js";
import { PgIdentityStore } from "./core/auth/pg-store.js";
import { registerIdentityRoutes } from "./core/auth/routes.js";
import { IDENTITY_MIGRATIONS } from "./core/auth/sqlite-migrations.js";
import { SqliteIdentityStore } from "./core/auth/sqlite-store.js";
import { openBackends, type Backends } from "./core/backends.js";
import type { IdentityStore } from "./core/auth/store.js";
import { optionValues } from "./core/cli/option-values.js";
import { WalCheckpointer } from "./core/db/wal-checkpointer.js";
import { openDatabase, type Db } from "./core/db/sqlite.js";
import { buildEdgeApp } from "./core/http/app.js";
import { ConnectionLimits } from "./core/http/connection-limits.js";
import { Readiness } from "./core/http/readiness.js";
import { createLogger, type Logger } from "./core/logger.js";
import { MetricsListener } from "./core/metrics/listener.js";
import { createMetricsRegistry } from "./core/metrics/registry.js";
import { registerClusterMetrics } from "./core/metrics/cluster.js";
import { registerConnectionMetrics } from "./core/metrics/connections.js";
import type { EdgeService, PlatformConfig, ServiceContext } from "./core/service.js";
import { UserError } from "./core/errors.js";
import { markStateDirInUse } from "./core/server/state-lock.js";
import { createDnsService } from "./dns/service.js";
import { createD1Service } from "./d1/service.js";
import { createKvService } from "./kv/service.js";
import { createQueuesService } from "./queues/service.js";
import { createR2Service } from "./r2/service.js";
import { createWorkersService } from "./workers/service.js";
import { createAiGatewayService } from "./ai-gateway/service.js";
import { createDashboardService } from "./dashboard/service.js";
import { createProxyService } from "./edge/origin/service.js";
import { createCacheRulesService } from "./edge/rules/service.js";
import type { EdgeZones } from "./edge/ports.js";
import { certificateServeOptions, readCertificatesConfig } from "./edge/certificates/config.js";
import { createEdgeTls, type EdgeTls } from "./edge/certificates/edge-tls.js";
import { createAnalyticsService } from "./analytics/service.js";
import { httpRequestsSpec, recordHttpRequest } from "./edge/analytics/http-requests.js";
import { recordInvocation, recordSubrequest, workersInvocationsSpec } from "./workers/analytics.js";
import { r2OperationsSpec, recordR2Operation } from "./r2/operations-dataset.js";
import { dnsAnalyticsSpec, recordDnsQueries } from "./dns/analytics.js";
import { aiGatewayRequestsSpec, recordGatewayRequest } from "./ai-gateway/analytics.js";
import { serveOptions as dnsOptions } from "./dns/config.js";
import { serveOptions as edgeOptions } from "./edge/config.js";
import { createEdgeService, type EdgeArea } from "./edge/service.js";
import { EdgeMetrics } from "./edge/metrics.js";
import { readEdgeLoops, threadsServeOptions } from "./edge/threads/config.js";
import { EdgeThreads } from "./edge/threads/edge-threads.js";
import { CACHE_AREA } from "./edge/cache/service.js";
import { SETTINGS_AREA } from "./edge/settings/pg-store.js";
import { RULES_AREA } from "./edge/rules/pg-store.js";
import { DNS_BUS_AREA } from "./dns/zones/zone-sync.js";
import { ROUTES_AREA } from "./workers/routing/pg-store.js";
import { serveOptions as r2Options } from "./r2/config.js";
import { serveOptions as workersOptions } from "./workers/config.js";

export interface RunningPlatform {
  url: string;
  app: FastifyInstance;
  services: EdgeService[];
  log: Logger;
  stop(): Promise<void>;
}

/** Opens the state, wires the services in dependency order, and starts listening. */
export async function startPlatform(config: PlatformConfig, log: Logger = createLogger({ level: config.core.logLevel })): Promise<RunningPlatform> {
  // Refused before anything is opened (PostgreSQL reached, migrations run).
  const edgeLoops = readEdgeLoops(optionValues(config.options, threadsServeOptions)["edge-threads"], config.core.databaseUrl !== undefined);
  mkdirSync(config.stateDir, { recursive: true, mode: 0o700 });
  // Until it stops, `edgecli state copy` refuses this state directory.
  const inUse = markStateDirInUse(config.stateDir);
  const dbs: Db[] = [];
  // Checkpoints run on a thread of their own, never inside a request's commit (core/db/wal-checkpointer.ts).
  const checkpointer = new WalCheckpointer(log);
  const openDb: ServiceContext["openDb"] = (name, migrations) => {
    const db = openDatabase(join(config.stateDir, "db", `${name}.sqlite`), migrations);
    dbs.push(db);
    checkpointer.adopt(db);
    return db;
  };
  let backends: Backends;
  try {
    backends = await openBackends(config.core, config.stateDir, log);
  } catch (err) {
    inUse.release();
    throw err;
  }
  const closeStores = async () => {
    await checkpointer.close();
    for (const db of dbs) db.close();
    await backends.close();
    inUse.release();
  };
  let boot: BootstrapResult | undefined;
  let identities: IdentityStore;
  try {
    ({ identities, boot } = await openIdentities(backends, openDb, config.stateDir));
  } catch (err) {
    await closeStores();
    throw err;
  }
  const auth = new AuthService(identities, log, backends.bus);
  let edgeUrl = "";
  // One count for the edge port and the HTTPS port, whose connections it serves once decrypted.
  const connections = new ConnectionLimits(config.core.connections);
  // The port listens before the services start (they need its URL, and the HTTPS port hands it its connections),
  // but answers 503 to all but /healthz and /readyz until every service has started.
  const readiness = new Readiness();
  // One Prometheus registry for the node; every area declares its metrics on it (ctx.metrics).
  const metrics = config.core.metrics ? createMetricsRegistry() : undefined;
  if (metrics) {
    registerClusterMetrics(metrics, backends.postgres, backends.bus);
    // The edge threads' own connections too (those they hand over are counted here, as this thread serves them).
    registerConnectionMetrics(metrics, () => {
      const own = connections.openConnections;
      const inThreads = threads?.openConnections;
      return inThreads ? { plain: own.plain + inThreads.plain, tls: own.tls + inThreads.tls } : own;
    });
  }
  // Every request of the edge port, counted by the dispatch (the edge threads' too, sent here in batches).
  const edgeMetrics = metrics && new EdgeMetrics(metrics);
  // The hostname plan first: the areas check tenants' names against it. Its names are the areas' own options.
  let edge: EdgeArea;
  try {
    const names = optionValues(config.options, {
      "s3-host": r2Options["s3-host"],
      "workers-domain": workersOptions["workers-domain"],
      "name-servers": dnsOptions["name-servers"],
    });
    edge = createEdgeService(
      optionValues(config.options, edgeOptions),
      {
        s3Host: names["s3-host"],
        workersDomain: names["workers-domain"],
        nameServers: names["name-servers"],
        listenHost: config.core.host,
      },
      edgeMetrics,
    );
  } catch (err) {
    await closeStores();
    throw err;
  }
  const ctx: ServiceContext = {
    config,
    options: (spec) => optionValues(config.options, spec),
    log,
    auth,
    identities,
    backend: backends.description,
    openDb,
    postgres: backends.postgres,
    openPostgres: (area, migrations) => backends.openPostgres(area, migrations),
    content: (name) => backends.content(name),
    bus: backends.bus,
    nodeId: backends.nodeId,
    edgeUrl: () => edgeUrl,
    // The same server the edge port accepts on: what it serves and how (raw handlers, limits, timeouts) is not repeated.
    admitEdgeConnection: (socket) => connections.admitAtAccept(socket),
    edgeConnection: (socket) => {
      connections.handOver(socket);
      app.server.emit("connection", socket);
    },
    edgeRequest: (req, res) => app.server.emit("request", req, res),
    platformHostnames: edge.platformHostnames,
    metrics,
  };

  const identity: EdgeService = { name: "identity", registerApi: (app) => registerIdentityRoutes(app, auth) };
  const kv = createKvService(ctx);
  const r2 = createR2Service(ctx);
  const d1 = createD1Service(ctx);
  const queues = createQueuesService(ctx);
  // R2's event notifications go to queues of the bucket's account; a deleted queue's rules go with it.
  r2.attachQueues({
    queueName: (accountId, queueId) => queues.queueName(accountId, queueId),
    send: (accountId, queueId, bodies) => queues.sendJson(accountId, queueId, bodies),
  });
  queues.onQueueDeleted((accountId, queueId) => r2.queueDeleted(accountId, queueId));
  const dns = createDnsService(ctx);
  // Opt-in (--edge-tls-port): the HTTPS port, and the certificates the platform orders itself (edge/certificates/).
  // They serve Workers' Custom Domains, whose API shows their state: each side gets the other's port.
  const tlsConfig = readCertificatesConfig(ctx.options(certificateServeOptions));
  let edgeTls: EdgeTls | undefined;
  // Workers reaches the other areas through ports: each data area's binding backend (does a resource exist, and
  // its binding protocol), Queues' consumers of scripts, DNS's zones.
  const workers = createWorkersService(ctx, {
    bindings: {
      r2: {
        exists: (accountId, bucket) => r2.bucketExists(accountId, bucket),
        handle: (call, req, res) => r2.bindingHandler({ accountId: call.accountId, bucketName: call.resource }, req, res),
      },
      kv: {
        exists: (accountId, id) => kv.namespaceExists(accountId, id),
        handle: (call, req, res) => kv.bindingHandler({ accountId: call.accountId, namespaceId: call.resource }, req, res),
      },
      d1: {
        exists: (accountId, uuid) => d1.databaseExists(accountId, uuid),
        handle: (call, req, res) => d1.bindingHandler({ accountId: call.accountId, databaseId: call.resource }, req, res),
      },
      queues: {
        exists: (accountId, name) => queues.queueExists(accountId, name),
        handle: (call, req, res) => queues.bindingHandler({ accountId: call.accountId, queueName: call.resource }, req, res),
      },
    },
    queues,
    zones: dns.zonesPort,
    edgeAddresses: dns.edgeAddresses,
    certificates: tlsConfig && {
      state: (hostname, accountId) => edgeTls!.manager.state(hostname, accountId),
      notIssued: (accountId, hostnames) => edgeTls!.manager.notIssued(accountId, hostnames),
      pendingPerAccount: tlsConfig.pendingPerAccount,
    },
  });
  edgeTls =
    tlsConfig &&
    createEdgeTls(ctx, tlsConfig, {
      zones: dns.zonesPort,
      zoneRecords: dns.zones,
      domains: workers.customDomains,
      // Asked per TLS connection (its SNI), once the platform serves: the proxy's settings exist by then.
      http2For: (name) => {
        const zs = dns.zones.zoneFor(name.toLowerCase().replace(/\.$/, ""));
        return zs === undefined || proxy.settings.on(zs.zone.id, "http2");
      },
      versionsFor: (name) => proxy.settings.tlsVersions(name === undefined ? undefined : dns.zones.zoneFor(name.replace(/\.$/, ""))?.zone.id),
    });
  const aiGateway = createAiGatewayService(ctx);
  // The GraphQL Analytics API and its per-minute rollups: each area hands over its datasets (R2: what its buckets
  // hold; the edge: tenants' HTTP traffic, counted by the dispatch as each request ends).
  const analytics = createAnalyticsService(ctx, { zoneAccount: (zoneId) => dns.zones.get(zoneId)?.zone.account_id });
  for (const dataset of r2.analyticsDatasets) analytics.addDataset(dataset);
  analytics.addGroupedDataset(httpRequestsSpec);
  // The hosted datasets of the other areas: each area tells its events through a port, recorded into the rollups here.
  const rollups = analytics.rollups;
  analytics.addGroupedDataset(workersInvocationsSpec);
  workers.attachAnalytics({
    invocation: (e) => recordInvocation(rollups, e),
    subrequest: (e) => recordSubrequest(rollups, e),
  });
  analytics.addGroupedDataset(r2OperationsSpec);
  r2.attachAnalytics((e) => recordR2Operation(rollups, e));
  analytics.addGroupedDataset(dnsAnalyticsSpec);
  dns.attachAnalytics((counts, protocol) =>
    recordDnsQueries(
      rollups,
      (name) => {
        const zone = dns.zones.zoneFor(name)?.zone;
        return zone && { id: zone.id, accountId: zone.account_id };
      },
      counts,
      protocol,
    ),
  );
  analytics.addGroupedDataset(aiGatewayRequestsSpec);
  aiGateway.attachAnalytics((e) => recordGatewayRequest(rollups, e));
  dns.zones.onChange((zs, kind, origin) => {
    // Once, through the node the zone was deleted on.
    if (kind === "deleted" && origin === "local")
      void analytics.forgetScope(zs.zone.id).catch((err: unknown) => log.warn({ err, zoneId: zs.zone.id }, "analytics of a deleted zone not removed"));
  });
  // The edge decides by Host which of these a request reaches (edge/hostnames/dispatch.ts), before the routes (v4
  // API, dashboard); a tenant's hostname is a name at or under one of DNS's zones.
  edge.attach({
    zoneOf: (host) => {
      const zone = dns.zones.zoneFor(host)?.zone;
      return zone && { id: zone.id, name: zone.name, accountId: zone.account_id };
    },
    zonesGeneration: () => dns.originGeneration(),
    traffic: (event) => recordHttpRequest(analytics.rollups, event),
    handlers: {
      workers: (req, res) => workers.handleRaw(req, res),
      workersMayServe: (host) => workers.mayServe(host),
      workersGeneration: () => workers.routesGeneration(),
      workerUpgrade: (req, socket, head) => workers.upgradeWorker(req, socket, head),
      tailUpgrade: (req, socket, head) => workers.upgradeTail(req, socket, head),
      gateway: (req, res) => aiGateway.handleRaw!(req, res),
      s3: (req, res) => r2.handleRaw!(req, res),
    },
  });
  // The proxy sees DNS through a narrow port: zones' accounts, their deletion, and what a name resolves to. Tenants'
  // hostnames reach it after Workers (routes and Custom Domains).
  const edgeZones: EdgeZones = {
    accountOf: (zoneId) => dns.zones.get(zoneId)?.zone.account_id,
    nameOf: (zoneId) => dns.zones.get(zoneId)?.zone.name,
    onDeleted: (listener) =>
      dns.zones.onChange((zs, kind, origin) => {
        // Once, through the node the zone was deleted on.
        if (kind === "deleted" && origin === "local") listener(zs.zone.id);
      }),
    originOf: (host) => dns.originOf(host),
    generation: () => dns.originGeneration(),
  };
  // Cache Rules (the Rulesets API, phase http_request_cache_settings); `cacheRules.rules` is the CacheRules port the
  // cache (edge/cache, inside the proxy) asks per request.
  const cacheRules = createCacheRulesService(ctx, { zones: edgeZones });
  const proxy = createProxyService(ctx, { zones: edgeZones, isPlatformAddress: (ip) => dns.isPlatformAddress(ip), cacheRules: cacheRules.rules, edgeLoops });
  // Event loops beside this one on the edge port (--edge-threads): each serves proxied names from a copy of the
  // tenant state these areas' notices keep current, and hands everything else to this thread.
  const threads =
    edgeLoops > 1
      ? new EdgeThreads({
          script: fileURLToPath(new URL("./edge-thread.js", import.meta.url)),
          loops: edgeLoops,
          bus: backends.bus,
          areas: [DNS_BUS_AREA, SETTINGS_AREA, RULES_AREA, ROUTES_AREA, CACHE_AREA],
          stateDir: config.stateDir,
          options: config.options,
          log,
          traffic: (event) => recordHttpRequest(analytics.rollups, event),
          requests: edgeMetrics,
          connection: (socket) => app.server.emit("connection", socket),
        })
      : undefined;
  // DNS answers proxied names by the zone's `ipv6` setting (no AAAA of the edge while it is off).
  dns.useEdgeSettings({ ipv6: (zoneId) => proxy.settings.on(zoneId, "ipv6"), onChange: (listener) => proxy.settings.onChange(listener) });
  edge.addTenantHandler(proxy.forward);
  // Workers' fetch() calls: a URL of a Worker's own zone reaches its origin through the proxy, not the zone's Workers.
  workers.attachSubrequests({
    fetch: (req, res, from) => proxy.subrequest(req, res, from),
    upgrade: (req, socket, head, from) => proxy.subrequestUpgrade(req, socket, head, from),
    connect: (target, socket, head, from) => proxy.connectOut(target, socket, head, from),
    // The Cache API (caches.default, caches.open) of Workers: the edge's cache, in the zones the Worker is routed in.
    cache: (req, res, from) => proxy.cacheApi(req, res, from),
  });
  edge.addTenantUpgradeHandler(proxy.upgrade);
  // The HTTPS port after Workers: it starts once the route table (its Custom Domains) is read.
  const services: EdgeService[] = [
    identity,
    edge,
    dns,
    kv,
    d1,
    queues,
    workers,
    ...(edgeTls ? [edgeTls] : []),
    proxy,
    cacheRules,
    aiGateway,
    r2,
    analytics,
    createDashboardService(ctx),
  ];

  let app: FastifyInstance;
  try {
    // The areas' PostgreSQL schemas are up to date before the first request.
    await backends.migrate();
    const health = backends.description.database === "sqlite" && backends.description.content === "files" ? undefined : () => backends.health();
    app = await buildEdgeApp({
      log,
      auth,
      services,
      dispatch: edge.dispatch,
      bodyLimit: config.core.bodyLimit,
      bodyIdleMs: config.core.bodyIdleMs,
      bodyMinBytesPerSecond: config.core.bodyMinBytesPerSecond,
      headTimeoutMs: config.core.headTimeoutMs,
      connections,
      readiness,
      health,
      // Every /zones/{zone_id}/… route of every area answers from this node's copies (zones and records, settings,
      // Cache Rules): first every notice committed before the request is applied (the bus's barrier covers every
      // area's), then a zone this node never heard of is read from the store.
      catchUp: async (req) => {
        const zoneId = (req.params as { zone_id?: unknown } | undefined)?.zone_id;
        if (typeof zoneId !== "string") return;
        await dns.zones.upToDate();
        await dns.zones.catchUp(zoneId);
      },
      changesApplied:
        threads &&
        (async () => {
          await backends.bus.barrier();
          await threads.synced();
        }),
    });
    await app.listen({ host: config.core.host, port: config.core.port });
  } catch (err) {
    await closeStores();
    throw listenError(err);
  }
  const addr = app.server.address() as AddressInfo;
  const host = addr.family === "IPv6" ? `[${addr.address}]` : addr.address;
  edgeUrl = `http://${host}:${addr.port}`;

  const started: EdgeService[] = [];
  const metricsListener = metrics && new MetricsListener(metrics, log);
  const stop = async () => {
    // Probes say "stopping" and new requests are refused at once, so a load balancer moves on while this node drains.
    readiness.stopping();
    // The threads drain beside this one (the connections they carried here end as this server closes them), and they
    // still apply every change this server's last calls make; then they end.
    const threadsDrained = threads?.drain();
    for (const s of services) s.closeUpgraded?.();
    await app.close();
    await threadsDrained;
    await threads?.stop();
    await metricsListener?.close();
    for (const s of [...started].reverse()) await s.stop?.().catch((err) => log.error({ err, service: s.name }, "service failed to stop"));
    await closeStores();
    log.flush?.();
  };
  try {
    for (const s of services) {
      // Listed before its start: a start that fails half way (the workers' binding server listening, the secrets
      // then refused) is stopped with the rest, or what it began would keep the process alive.
      started.push(s);
      await s.start?.();
    }
  } catch (err) {
    await stop();
    throw listenError(err);
  }

  if (threads) {
    try {
      // Node gives no public way to a server's descriptor; the threads accept on this same socket.
      await threads.start((app.server as unknown as { _handle: { fd: number } })._handle.fd);
    } catch (err) {
      await stop();
      throw err;
    }
  }
  const endpoints: Record<string, string> = { edge: edgeUrl, api: `${edgeUrl}/client/v4`, ai_gateway: `${edgeUrl}/v1`, state_dir: config.stateDir };
  for (const s of services) Object.assign(endpoints, s.describe?.() ?? {});
  endpoints.backend = backends.description.summary;
  if (config.core.metrics && metricsListener) {
    try {
      endpoints.metrics = await metricsListener.listen(config.core.metrics.host, config.core.metrics.port);
    } catch (err) {
      await stop();
      throw listenError(err);
    }
  }
  readiness.ready();
  printBanner(endpoints, boot, config.stateDir);
  log.info({ endpoints, backend: backends.description, nodeId: backends.nodeId }, "platform ready");
  return { url: edgeUrl, app, services, log, stop };
}

/** Number of the cluster-wide lock under which one node (the first to start) creates the bootstrap credentials. */
const BOOTSTRAP_LOCK = 0x6564_6765_626f_6fn; // "edgeboo"

/**
 * The identity store on the node's backend, with the bootstrap account made on the very first start: in the state
 * directory, or, on PostgreSQL, by whichever node gets the lock first (the others check their EDGE_BOOTSTRAP_*).
 */
async function openIdentities(backends: Backends, openDb: ServiceContext["openDb"], stateDir: string) {
  const pg = backends.openPostgres("core", IDENTITY_PG_MIGRATIONS);
  if (!pg) {
    const identities = new SqliteIdentityStore(openDb("core", IDENTITY_MIGRATIONS));
    return { identities, boot: await bootstrapIdentity(identities, stateDir) };
  }
  await backends.migrate();
  const identities = new PgIdentityStore(pg);
  const boot = await pg.withAdvisoryLock(BOOTSTRAP_LOCK, () => bootstrapIdentity(identities, stateDir, process.env, { shared: true }));
  return { identities, boot };
}

/** A port that is taken or privileged is the operator's to fix: say which, without a stack trace. */
function listenError(err: unknown): unknown {
  const e = err as NodeJS.ErrnoException & { address?: string; port?: number };
  if (e?.code === "EADDRINUSE")
    return new UserError(`Cannot listen on ${e.address}:${e.port}: the address is already in use. Choose another port (see edgecli serve --help).`);
  if (e?.code === "EACCES") return new UserError(`Cannot listen on ${e.address}:${e.port}: permission denied (ports below 1024 need privileges).`);
  if (e?.code === "EADDRNOTAVAIL") return new UserError(`Cannot listen on ${e.address}: no such address on this machine.`);
  return err;
}

function printBanner(endpoints: Record<string, string>, boot: BootstrapResult | undefined, stateDir: string): void {
  const w = Math.max(...Object.keys(endpoints).map((k) => k.length));
  const lines = ["", "Edge Platform is running:", ...Object.entries(endpoints).map(([k, v]) => `  ${k.padEnd(w)}  ${v}`)];
  if (boot) {
    lines.push(
      "",
      "First start: created an account and credentials. They are shown this once and kept in",
      `${join(stateDir, CREDENTIALS_FILE)} (mode 0600):`,
      `  account id  ${boot.account_id}`,
      `  email       ${boot.email}`,
      `  API key     ${boot.api_key}`,
      `  API token   ${boot.api_token}`,
    );
  }
  process.stderr.write(lines.join("\n") + "\n\n");
}

/**
 * Defence in depth against prototype pollution (docs/ARCHITECTURE.md, "Security"): with Object.prototype sealed, a
 * write through `__proto__` that adds a property (what every pollution exploit does: `expiration_ttl`, `isAdmin`)
 * throws (ESM code is strict) and fails that one request, instead of silently reaching every object of every tenant.
 * Sealed, not frozen: freezing also makes `constructor`, `toString` and the rest read-only, and then assigning such a
 * key on any plain object throws (the "override mistake") — zod does exactly that when a body carries a
 * `constructor` field, which a fuzzer found as 500s. Sealing keeps the existing properties writable. Done once
 * everything is loaded and started, so no dependency is refused while it sets itself up.
 */
function sealObjectPrototype(log: Logger): void {
  Object.seal(Object.prototype);
  log.info("Object.prototype sealed");
}

/** How long a stopped platform's process may take to end by itself before it is ended. */
const EXIT_GRACE_MS = 3_000;

/** Runs until SIGINT/SIGTERM, then stops accepting, drains in-flight requests and closes the store. */
export async function runPlatformUntilSignal(config: PlatformConfig): Promise<number> {
  const platform = await startPlatform(config);
  if (config.core.sealObjectPrototype) sealObjectPrototype(platform.log);
  return new Promise<number>((resolve) => {
    let stopping = false;
    // Everything is stopped and the stores are closed: the process ends once nothing is left to run. Work given up
    // on the way (a library's retry timer, e.g. acme-client's backoff while a CA does not answer) may keep it alive
    // for a minute more; it is cut after a short grace instead, so a stop takes seconds whatever a peer does.
    const exitSoon = (code: number) => {
      resolve(code);
      setTimeout(() => process.exit(code), EXIT_GRACE_MS).unref();
    };
    const onSignal = (sig: NodeJS.Signals) => {
      if (stopping) return;
      stopping = true;
      platform.log.info({ signal: sig }, "shutting down");
      platform.stop().then(
        () => exitSoon(0),
        (err) => {
          platform.log.error({ err }, "shutdown failed");
          exitSoon(1);
        },
      );
    };
    process.once("SIGINT", onSignal);
    process.once("SIGTERM", onSignal);
  });
}
