import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
// Imported, not the global: `performance` on globalThis is a lazy accessor Node defines, read through a global IC a request.
import { performance } from "node:perf_hooks";
import type { TLSSocket } from "node:tls";
import { knownCacheStatus, type EdgeRequestCounter, type EdgeTrafficArea } from "../metrics.js";
import type { HttpRequestEvent } from "../analytics/http-requests.js";
import { cacheStatusOf } from "../cache/http-cache.js";
import { ErrorPages, sendErrorPage } from "./error-page.js";
import { normalizeHostname } from "./names.js";
import { HostMemo } from "./host-memo.js";
import type { HostClass, Hostnames } from "./plan.js";

/** Takes a request; true when it answered it. */
export type RawHandler = (req: IncomingMessage, res: ServerResponse) => boolean;
/** Takes an upgrade (a WebSocket); true when it took the socket. */
export type UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer) => boolean;

/** The platform's handlers the dispatch hands a request to (platform.ts takes them from the services). */
export interface PlatformHandlers {
  /** Workers: `<script>.<workers domain>`, routes and Custom Domains. */
  workers: RawHandler;
  /** WebSockets to Workers (same hostnames as `workers`). */
  workerUpgrade: UpgradeHandler;
  /** `wrangler tail` sessions (`/tail/v1/<id>`), on the API's hostnames. */
  tailUpgrade: UpgradeHandler;
  /** The AI gateway (`/v1/`). */
  gateway: RawHandler;
  /** R2's S3 API: everything on the S3 host; signed requests path style on the API's hostnames. */
  s3: RawHandler;
  /**
   * Whether `workers` may take a request with this Host (as sent) on some path: false only when no route, Custom
   * Domain or `<script>.<workers domain>` name could match it; then the dispatch goes past Workers without asking.
   * Kept per Host until `workersGeneration` changes. Without it, `workers` is asked for every tenant request.
   */
  workersMayServe?: (host: string | undefined) => boolean;
  /** Changes whenever Workers' routes and Custom Domains are read again (what `workersMayServe` answers from). */
  workersGeneration?: () => number;
}

/**
 * What the dispatch works out once per Host (HostMemo): its class (as off loopback), whether Workers may serve it, and
 * a tenant's zone for the metrics and the analytics (false: not worked out, ask `zoneOf` when counting).
 */
interface HostFacts {
  cls: HostClass;
  workers: boolean;
  zone: TenantZone | undefined | false;
}

const LOOPBACK = /^(127\.|::1$|::ffff:127\.)/;

/**
 * The edge's one decision by Host. Every request of the edge port and the HTTPS port comes here first
 * (core/http/app.ts): its Host is classified once (plan.ts) and the request goes to the services of that class only.
 * - platform API hostnames (and, on loopback, hosts nothing else claims): the AI gateway, S3 path style, then the
 *   v4 API and the dashboard (Fastify, when `request` returns false);
 * - the dashboard's own hostname: the dashboard and the v4 API it calls, nothing else;
 * - the S3 host and names under it: S3 only; `<script>.<workers domain>`: that Worker only;
 * - tenants' hostnames: Workers by route or Custom Domain, then each of `tenantHandlers` in order, else an error
 *   page; never the API, the dashboard, the gateway or S3;
 * - anything else: an error page (1001).
 * On the HTTPS port the Host must name the host the connection's SNI did (else 421), so one tenant's certificate
 * never fronts another's hostnames or the platform's.
 */
export class EdgeDispatch {
  /**
   * Tenants' content after Workers, asked in order (the hosted order: Workers, then cache and origin). The proxy
   * (edge/origin/) adds its handler here; a handler that answers returns true.
   */
  readonly tenantHandlers: RawHandler[] = [];
  /** Tenants' upgrades after Workers' WebSockets, asked in order (the proxy's WebSocket pass-through). */
  readonly tenantUpgradeHandlers: UpgradeHandler[] = [];
  private handlers?: PlatformHandlers;
  private zoneOf: (host: string) => TenantZone | undefined = () => undefined;
  private traffic?: (event: HttpRequestEvent) => void;
  /** Per Host: its class and whether Workers may serve it, while zones and Workers' routes stay as they were. */
  private hosts?: HostMemo<HostFacts>;

  constructor(
    private readonly hostnames: Hostnames,
    private readonly metrics?: EdgeRequestCounter,
  ) {}

  /**
   * `zoneOf` says which zone a tenant's hostname is in (the metrics' zone label, the analytics' scope); `traffic` is
   * told of every tenant request that ended (the analytics' rollups).
   */
  attach(
    handlers: PlatformHandlers,
    observers: {
      zoneOf?: (host: string) => TenantZone | undefined;
      traffic?: (event: HttpRequestEvent) => void;
      /** Changes whenever a zone is created, changed or deleted (which names are tenants'): the per-Host memo's key. */
      zonesGeneration?: () => number;
    } = {},
  ): void {
    this.handlers = handlers;
    if (observers.zoneOf) this.zoneOf = observers.zoneOf;
    this.traffic = observers.traffic;
    const { zonesGeneration } = observers;
    const { workersMayServe, workersGeneration } = handlers;
    // Kept only when every change that alters an answer is seen: the tenant names (zones) and Workers' routes.
    this.hosts =
      zonesGeneration && workersMayServe && workersGeneration
        ? new HostMemo(
            (host) => {
              const cls = this.hostnames.classify(host, false);
              const tenant = cls.kind === "tenant";
              return { cls, workers: !tenant || workersMayServe(host), zone: tenant ? this.zoneOf(cls.host) : undefined };
            },
            // Both only grow: their sum changes whenever either does.
            () => zonesGeneration() + workersGeneration(),
          )
        : undefined;
  }

  /** Adds a handler of tenants' hostnames, asked after Workers and the handlers added before it. */
  addTenantHandler(handler: RawHandler): void {
    this.tenantHandlers.push(handler);
  }

  /** Adds a handler of tenants' upgrades, asked after Workers' and the handlers added before it. */
  addTenantUpgradeHandler(handler: UpgradeHandler): void {
    this.tenantUpgradeHandlers.push(handler);
  }

  /** The class of the request's Host (on loopback, hosts nothing claims are the API's). */
  classOf(req: IncomingMessage): HostClass {
    return this.factsOf(req).cls;
  }

  /**
   * Whether a request with this Host (as sent) is a tenant's that no Worker may take: the proxy and the cache alone
   * answer it (an edge thread serves such connections itself, edge/threads/). False while the memo is not kept.
   */
  tenantWithoutWorkers(host: string | undefined): boolean {
    if (!this.hosts) return false;
    const facts = this.hosts.get(host ?? "");
    return facts.cls.kind === "tenant" && !facts.workers;
  }

  /** The request's Host's class and whether Workers may serve it. */
  private factsOf(req: IncomingMessage): HostFacts {
    const host = req.headers.host;
    const facts: HostFacts = this.hosts ? this.hosts.get(host ?? "") : { cls: this.hostnames.classify(host, false), workers: true, zone: false };
    // Loopback changes one answer only: a host nothing claims is the API's there (plan.ts, classify).
    if (facts.cls.kind === "unknown" && LOOPBACK.test(req.socket.localAddress ?? ""))
      return { cls: { kind: "platform", service: "api", host: facts.cls.host }, workers: true, zone: undefined };
    return facts;
  }

  /** Answers the request, or returns false for the v4 API and the dashboard (Fastify's routes) to answer it. */
  request(req: IncomingMessage, res: ServerResponse): boolean {
    const started = performance.now();
    // Kept: by the answer's close, a connection that ended with it is no longer the request's (req.socket is null).
    const socket = req.socket;
    const bytesBefore = socket.bytesWritten;
    const answered = this.answer(req, res);
    if (this.metrics || (this.traffic && answered.tenant !== undefined)) {
      const area: EdgeTrafficArea = answered.area ?? (pathOf(req).startsWith("/client/v4") ? "api" : "dashboard");
      // An answer written whole in this turn (a cache HIT from memory, an error page) is counted now: its status and
      // bytes are final, and no close listener is needed. Others are counted in their close event.
      if (res.writableFinished) this.countSafely(req, res, socket, area, answered.tenant, started, bytesBefore);
      else res.once("close", () => this.countSafely(req, res, socket, area, answered.tenant, started, bytesBefore));
    }
    return answered.area !== undefined;
  }

  /**
   * Counts a request whose answer ended (or whose client went away): the metrics, and the analytics' rollups. Never
   * fails the request or the process: in the close event a throw would be uncaught (and prom-client throws on a label
   * set it was not declared with, e.g. once a polluted Object.prototype adds a key).
   */
  private countSafely(
    req: IncomingMessage,
    res: ServerResponse,
    socket: Socket,
    area: EdgeTrafficArea,
    tenant: HostFacts | undefined,
    started: number,
    bytesBefore: number,
  ): void {
    try {
      const status = res.headersSent ? res.statusCode : undefined;
      // On a kept-alive connection bytesWritten is the connection's: the difference is this answer's share.
      const bytes = Math.max(0, socket.bytesWritten - bytesBefore);
      const tenantHost = tenant?.cls.host;
      const zone = tenant === undefined ? undefined : tenant.zone !== false ? tenant.zone : this.zoneOf(tenantHost!);
      const cacheStatus = knownCacheStatus(cacheStatusOf(res));
      this.metrics?.record(area, status, zone?.name ?? "", (performance.now() - started) / 1000, bytes, cacheStatus);
      if (zone && this.traffic) {
        const referer = req.headers.referer;
        this.traffic({
          zoneId: zone.id,
          accountId: zone.accountId,
          host: tenantHost!,
          method: methodLabel(req.method),
          status: status ?? 0,
          cacheStatus: cacheStatusLabel(cacheStatus),
          bytes,
          visit: typeof referer !== "string" || !refersTo(referer, tenantHost!),
        });
      }
    } catch {
      // The request is answered; only its count is lost.
    }
  }

  /** Who answered: `area` undefined when Fastify's routes are to; `tenant`: what is known of a tenant's hostname. */
  private answer(req: IncomingMessage, res: ServerResponse): { area?: EdgeTrafficArea; tenant?: HostFacts } {
    const h = this.handlers!;
    const facts = this.factsOf(req);
    const cls = facts.cls;
    const sni = misdirectedSni(req, cls.host);
    if (sni !== undefined) return page(res, ErrorPages.misdirected(sni), cls.host);
    if (cls.kind === "unknown") return page(res, ErrorPages.unknownHost(), cls.host);
    if (cls.kind === "tenant") {
      if (facts.workers && h.workers(req, res)) return { area: "workers", tenant: facts };
      for (const handler of this.tenantHandlers) if (handler(req, res)) return { area: "proxy", tenant: facts };
      return { ...page(res, ErrorPages.nothingServed(), cls.host), tenant: facts };
    }
    switch (cls.service) {
      case "workers":
        return h.workers(req, res) ? { area: "workers" } : page(res, ErrorPages.reserved(), cls.host);
      case "s3":
        return h.s3(req, res) ? { area: "s3" } : page(res, ErrorPages.reserved(), cls.host);
      case "reserved":
        return page(res, ErrorPages.reserved(), cls.host);
      case "dashboard":
        return {};
      case "api": {
        if (h.gateway(req, res)) return { area: "ai_gateway" };
        const path = pathOf(req);
        const dashboardHere = this.hostnames.plan.dashboardHostname === undefined;
        // The dashboard's paths are never a bucket's (a bucket named `dash` would share the dashboard's origin).
        if (isDashboardPath(path)) return dashboardHere ? {} : page(res, ErrorPages.dashboardElsewhere(this.hostnames.plan.dashboardHostname!), cls.host);
        return h.s3(req, res) ? { area: "s3" } : {};
      }
    }
  }

  /** Takes an upgrade, or returns false: it is then served as a request (and refused there). */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const h = this.handlers!;
    const cls = this.classOf(req);
    if (misdirectedSni(req, cls.host) !== undefined) return false;
    if (cls.kind === "tenant") return h.workerUpgrade(req, socket, head) || this.tenantUpgradeHandlers.some((handler) => handler(req, socket, head));
    if (cls.kind === "platform" && cls.service === "workers") return h.workerUpgrade(req, socket, head);
    if (cls.kind === "platform" && cls.service === "api") return h.tailUpgrade(req, socket, head);
    return false;
  }
}

/** A tenant's zone, as the metrics and the analytics name it. */
export interface TenantZone {
  id: string;
  name: string;
  accountId: string;
}

const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE", "PURGE"]);
/** The method as a bounded value: the usual ones by name, anything else a client makes up as OTHER. */
const methodLabel = (method: string | undefined) => (method && METHODS.has(method) ? method : "OTHER");

/** The analytics' spelling of a cache status (lower case): one string per status (knownCacheStatus' few), not one a request. */
const CACHE_STATUS_LABELS = new Map<string, string>();
function cacheStatusLabel(status: string | undefined): string {
  const known = status ?? "dynamic";
  let label = CACHE_STATUS_LABELS.get(known);
  if (label === undefined) CACHE_STATUS_LABELS.set(known, (label = known.toLowerCase()));
  return label;
}

/** Whether a Referer names `host` (then the request is not a visit: the visitor was already on the site). */
function refersTo(referer: string, host: string): boolean {
  try {
    return new URL(referer).hostname.toLowerCase() === host;
  } catch {
    return false;
  }
}

function page(res: ServerResponse, p: Parameters<typeof sendErrorPage>[1], host: string): { area: "error_page" } {
  sendErrorPage(res, p, host);
  return { area: "error_page" };
}

const pathOf = (req: IncomingMessage) => {
  const url = req.url ?? "/";
  const q = url.indexOf("?");
  return q < 0 ? url : url.slice(0, q);
};

/**
 * `/dash` and `/dash/...`, however percent-encoded (S3 decodes its bucket segment: `/%64ash/` is bucket `dash`).
 * `/` is S3's ListBuckets when signed; unsigned, Fastify leads it to `/dash/`.
 */
function isDashboardPath(path: string): boolean {
  const slash = path.indexOf("/", 1);
  const first = slash < 0 ? path.slice(1) : path.slice(1, slash);
  let segment = first;
  try {
    segment = decodeURIComponent(first);
  } catch {
    // not a bucket either
  }
  return segment.toLowerCase() === "dash";
}

/** The SNI a TLS connection was opened for, when the request's Host names another host; undefined otherwise. */
function misdirectedSni(req: IncomingMessage, host: string): string | undefined {
  const socket = req.socket as Partial<TLSSocket>;
  if (!socket.encrypted) return undefined;
  const sni = typeof socket.servername === "string" ? normalizeHostname(socket.servername) : "";
  return sni === host ? undefined : sni || "(no name)";
}
