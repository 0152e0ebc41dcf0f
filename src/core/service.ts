import type { FastifyInstance } from "fastify";
import type { Registry } from "prom-client";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { AuthService } from "./auth/auth-service.js";
import type { BackendDescription } from "./backends.js";
import type { Bus } from "./cluster/bus.js";
import type { IdentityStore } from "./auth/store.js";
import type { OptionSpec, OptionValues } from "./cli/command.js";
import type { CoreConfig } from "./config.js";
import type { ContentStore } from "./content/store.js";
import type { PgMigration } from "./db/pg-migrations.js";
import type { Postgres } from "./db/postgres.js";
import type { Db, Migration } from "./db/sqlite.js";
import type { Logger } from "./logger.js";

/** Everything `edgecli serve` was told, after flags, environment and the platform config file are merged. */
export interface PlatformConfig {
  stateDir: string;
  /** Core's own settings (core/config.ts). */
  core: CoreConfig;
  /**
   * Every serve option by its long name (e.g. "dns-port"), as merged. Services do not read it: they get their own
   * options typed by their spec from `ServiceContext.options(serveOptions)`.
   */
  options: ReadonlyMap<string, unknown>;
}

/** What a tenant may try to put at or under a platform hostname (the refusal names it). */
export type TenantNameUse = "zone" | "DNS record" | "Custom Domain" | "route" | "custom certificate";

/**
 * The operator's hostname plan as the areas see it (src/edge/ implements it): the names the platform serves itself
 * (API, dashboard, S3 and its virtual hosts, the workers domain, the name servers) that no tenant may hold.
 */
export interface PlatformHostnames {
  /** Whether `name` is a platform hostname or a name under one. */
  isPlatformHostname(name: string): boolean;
  /**
   * Throws the 400 refusal (v4 envelope, naming the platform hostname) when a tenant's `use` of `name` is at or
   * under a platform hostname, or, for a zone, above one (its zone would hold it).
   */
  refuse(use: TenantNameUse, name: string): void;
}

/** What the platform hands each service when it is created. */
export interface ServiceContext {
  config: PlatformConfig;
  /**
   * The values of the serve options `spec` declares (the area's `serveOptions`), typed by it, defaults applied:
   * `readKvConfig(ctx.options(serveOptions))`.
   */
  options<S extends Record<string, OptionSpec>>(spec: S): OptionValues<S>;
  log: Logger;
  auth: AuthService;
  identities: IdentityStore;
  /**
   * Which backends this node uses. An area picks its store from it: SQLite (`openDb`) in the embedded default,
   * PostgreSQL (`openPostgres`) with --database-url:
   *   const pg = ctx.openPostgres("kv", KV_PG_MIGRATIONS);
   *   const store = pg ? new PgKvStore(pg, ctx.content("kv")) : new SqliteKvStore(ctx.openDb("kv", KV_MIGRATIONS), ctx.content("kv"));
   */
  backend: BackendDescription;
  /** Opens `<state>/db/<name>.sqlite` with the service's own migrations. */
  openDb(name: string, migrations: readonly Migration[]): Db;
  /** The node's PostgreSQL pool; undefined in the embedded default. */
  postgres?: Postgres;
  /**
   * The PostgreSQL pool, after registering the area's migrations (schema `<area>`; they run, under a cluster-wide
   * lock, before the platform listens); undefined in the embedded default.
   */
  openPostgres(area: string, migrations: readonly PgMigration[]): Postgres | undefined;
  /** The content store of one service: files under `<state>/content/<name>/`, or keys `<name>/<id>` in the bucket. */
  content(name: string): ContentStore;
  /**
   * Change notices between nodes (in-process when embedded): publish what changed after (or inside) the
   * transaction that changed it; subscribe to reload what the area caches, on `change` and on `resync`.
   */
  bus: Bus;
  /** This node among the platform's nodes. */
  nodeId: string;
  /** The URL the edge port answers on, e.g. http://127.0.0.1:8787 */
  edgeUrl(): string;
  /**
   * Counts a connection the HTTPS port accepted, from accept (before its handshake), under the edge port's limits
   * (--edge-max-connections and the per-client share): false when over one, and then it is closed.
   */
  admitEdgeConnection(socket: Socket): boolean;
  /**
   * Hands a connection counted by `admitEdgeConnection` to the edge port's HTTP server, which serves it as one it
   * accepted (same handlers and timeouts): the HTTPS port gives it its TLS connections once decrypted
   * (edge/certificates/tls-port.ts). Only once the platform listens (from `start` on).
   */
  edgeConnection(socket: Duplex): void;
  /**
   * Hands one request to the edge port's request listener, as if its HTTP server had read it (same limits, readiness,
   * dispatch by Host, then the API): the HTTPS port's HTTP/2 requests, made to look as HTTP/1 ones
   * (edge/certificates/http2.ts). Only once the platform listens.
   */
  edgeRequest(req: IncomingMessage, res: ServerResponse): void;
  /** The hostname plan: zones, records, Custom Domains, routes and certificates are checked against it. */
  platformHostnames: PlatformHostnames;
  /**
   * The node's Prometheus registry (core/metrics/registry.ts): an area declares its metrics on it in its own
   * `metrics.ts`, with bounded label values only. Served on the metrics listener (--metrics-port). Undefined when the
   * listener is off (--metrics-port 0): then nothing is counted at all, and the metrics cost nothing.
   */
  metrics?: Registry;
}

/**
 * The hooks every service provides (each optional), in the spirit of Miniflare's plugins:
 * the platform calls them in a fixed order and knows nothing else about the service.
 */
export interface EdgeService {
  readonly name: string;
  /** v4 API routes; registered under /client/v4, where every request is already authenticated. */
  registerApi?(app: FastifyInstance): void | Promise<void>;
  /** Routes outside /client/v4 that do their own authentication (e.g. the AI gateway's /v1). */
  registerPublic?(app: FastifyInstance): void | Promise<void>;
  /**
   * Takes a request before routing (e.g. worker traffic by Host); returns true when it handled it. platform.ts hands
   * it to the edge's dispatch (src/edge/hostnames/dispatch.ts), which asks it only for the hostnames it serves.
   */
  handleRaw?(req: IncomingMessage, res: ServerResponse): boolean;
  /**
   * Takes a request that asks to upgrade its connection (a WebSocket to a worker, a tail session) with the socket
   * and the bytes read past its head; returns true when it handled it. Upgrades no service takes are served as
   * ordinary requests (see app.ts).
   */
  handleUpgrade?(req: IncomingMessage, socket: Duplex, head: Buffer): boolean;
  /**
   * Ends the connections it took with handleUpgrade (briefly: a close, then a cut after a short bound). Called when
   * the platform stops, before the edge port closes: that close waits for every connection, and an upgraded one
   * (a WebSocket) has no end of its own.
   */
  closeUpgraded?(): void;
  /**
   * Starts listeners and background work; called after the edge port is listening, while it answers 503 to all but
   * /healthz and /readyz (core/http/readiness.ts): once every start has resolved, the node takes traffic, so a start
   * resolves only when what it serves is in place (deployed Workers running, routes, domains and certificates read).
   */
  start?(): Promise<void>;
  /** Stops accepting, finishes in-flight work, releases files. */
  stop?(): Promise<void>;
  /** Lines for the start banner, e.g. "DNS  udp+tcp 127.0.0.1:1053". */
  describe?(): Record<string, string>;
}
