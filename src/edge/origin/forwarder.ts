import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { isIP, connect as netConnect, type Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";
import type { Duplex } from "node:stream";
import { passedRequestHeaders, relay } from "../../core/http/relay.js";
import type { Logger } from "../../core/logger.js";
import { forwardedCacheStatus, type EdgeCache, type FetchOrigin, type OriginAnswer } from "../cache/http-cache.js";
import { cacheOverridesOf } from "../cache/worker-cf.js";
import { normalizeHostname } from "../hostnames/names.js";
import { HostMemo } from "../hostnames/host-memo.js";
import type { EdgeZones, OriginLookup } from "../ports.js";
import type { ZoneSettings } from "../settings/zone-settings.js";
import type { OriginAddressPolicy } from "./address-policy.js";
import { sendErrorPage, writeErrorPage, type EdgeErrorCode } from "./error-pages.js";
import { connectFailed, failureCode } from "./failures.js";
import { cacheableHeaders, looped, ORIGIN_ONLY_ANSWER_HEADERS, originRequestHeaders } from "./headers.js";
import { OriginPools, type OriginTarget } from "./pools.js";
import type { TenantResolver } from "./tenant-resolver.js";

/** The CDN-Loop token this edge adds and looks for (RFC 8586). */
export const LOOP_TOKEN = "edge-platform";
/** Addresses a name's origin is tried at, at most, for one request (the next one after a failed connect). */
const MAX_TRIES = 3;

/** An origin lookup whose address lists no one can change (it is shared by every request of its host). */
function frozen(target: OriginLookup): OriginLookup {
  if (target.kind === "proxied") {
    Object.freeze(target.addresses);
    Object.freeze(target.hostnames);
  }
  return Object.freeze(target);
}

/** A ray id, as hosted: 16 hex digits and where it was served (here the platform's own tag). */
export const newRay = () => {
  // Drawn in batches: one call to the CSPRNG per 512 rays, written out whole (hex digits and tag) as one string.
  if (rayOffset >= rayText.length) {
    const hex = randomBytes(RAYS_A_BATCH * 8).toString("hex");
    let text = "";
    for (let i = 0; i < RAYS_A_BATCH; i++) text += `${hex.slice(i * 16, i * 16 + 16)}${RAY_TAG}`;
    // Made flat once (a Buffer's latin1 text): each ray is then a slice of it, which Node's header check and the
    // head's write read as it is. A concatenation a request was a rope, flattened through V8's runtime in the check.
    rayText = Buffer.from(text, "latin1").toString("latin1");
    rayOffset = 0;
  }
  rayOffset += RAY_LENGTH;
  return rayText.slice(rayOffset - RAY_LENGTH, rayOffset);
};
const RAY_TAG = "-EDGE";
const RAY_LENGTH = 16 + RAY_TAG.length;
const RAYS_A_BATCH = 512;
let rayText = "";
let rayOffset = 0;

/** A Host header's hostname: lowercase, without port or trailing dot; undefined when it is no hostname (an IP literal, nothing). */
function hostOf(header: string | undefined): string | undefined {
  // Normalised as the hostname plan does it (hostnames/names.ts), so the dispatch and the proxy read one name.
  const host = normalizeHostname(header);
  return /^[a-z0-9_](?:[a-z0-9_.-]{0,251}[a-z0-9_])?$/.test(host) ? host : undefined;
}

/** Where a Host header's name goes: its hostname (undefined when it is none) and how DNS resolves it. */
interface HostOrigin {
  host: string | undefined;
  target: OriginLookup;
}

const NO_ORIGIN: HostOrigin = Object.freeze({ host: undefined, target: Object.freeze({ kind: "none" as const }) });

/**
 * The path sent to the origin: an origin-form target as it came; an absolute-form one (`GET http://host/path`) only
 * when it names the same host as the Host header (else the request is refused: two hosts in one request is a
 * smuggling shape); anything else (`*`, authority-form) is refused.
 */
function originPath(req: IncomingMessage, host: string): string | undefined {
  const url = req.url ?? "";
  if (url.startsWith("/")) return url;
  if (!/^https?:\/\//i.test(url)) return undefined;
  try {
    const u = new URL(url);
    if (u.hostname.replace(/\.$/, "").toLowerCase() !== host) return undefined;
    return u.pathname + u.search;
  } catch {
    return undefined;
  }
}

const HOST = new Set(["host"]);

/** The most an origin's answer to a WebSocket handshake may hold before its blank line (as undici's head bound). */
const MAX_UPGRADE_HEAD = 32 * 1024;

/**
 * Reads an origin's answer head off a raw connection: `switched` when it is 101, with the bytes read so far (the head
 * and whatever followed it); undefined when the head is over MAX_UPGRADE_HEAD. The connection is left paused.
 */
function awaitOriginHead(origin: Socket, done: (answer: { switched: boolean; received: Buffer } | undefined) => void): void {
  let received = Buffer.alloc(0);
  const onData = (chunk: Buffer) => {
    received = Buffer.concat([received, chunk]);
    const end = received.indexOf("\r\n\r\n");
    if (end < 0 && received.length <= MAX_UPGRADE_HEAD) return;
    origin.off("data", onData);
    origin.pause();
    if (end < 0 || end > MAX_UPGRADE_HEAD) {
      origin.destroy();
      return done(undefined);
    }
    done({ switched: /^HTTP\/1\.1 101[ \r]/.test(received.toString("latin1", 0, Math.min(end, 32))), received });
  };
  origin.on("data", onData);
}

/** An error page for a request forward() took, with the cache's status when the cache left the request to it. */
function forwardedErrorPage(res: ServerResponse, code: EdgeErrorCode, host: string, ray: string): void {
  const cacheStatus = forwardedCacheStatus(res);
  if (cacheStatus && !res.headersSent) res.setHeader("cf-cache-status", cacheStatus);
  sendErrorPage(res, code, host, ray);
}

/** Where a request goes, as the forwarder takes it: the name's zone and origin as DNS resolves it, and the facts passed on. */
export interface ResolvedOrigin {
  /** The requested name (lowercase, no port or trailing dot): Host and SNI. */
  host: string;
  /** Path and query sent to the origin. */
  path: string;
  /** How the client came (X-Forwarded-Proto, CF-Visitor). */
  scheme: "http" | "https";
  ray: string;
  /** The client's address (CF-Connecting-IP, appended to X-Forwarded-For). */
  clientIp: string;
  /** Its SSL mode is the zone's `ssl` setting. */
  zoneId: string;
  /** The proxied records' addresses, and CNAME targets outside our zones (resolved by the TenantResolver). */
  addresses: string[];
  hostnames: string[];
}

/** A request target in absolute form (what workerd sends its global outbound), or undefined. */
function absoluteUrl(target: string | undefined): URL | undefined {
  if (!target || !/^https?:\/\//i.test(target)) return undefined;
  try {
    return new URL(target);
  } catch {
    return undefined;
  }
}

/** The client's address; an IPv4 one on a dual-stack socket (`::ffff:a.b.c.d`) as IPv4. The regex only for those. */
export const clientIp = (req: IncomingMessage) => {
  const address = req.socket.remoteAddress ?? "";
  return address.startsWith("::ffff:") ? address.replace(/^::ffff:(?=\d+\.)/, "") : address;
};
const schemeOf = (req: IncomingMessage): "http" | "https" => ((req.socket as { encrypted?: boolean }).encrypted ? "https" : "http");

/**
 * The reverse proxy: a request whose Host is a proxied name of a zone here goes to its origin (the addresses DNS
 * resolves it to), streamed both ways on pooled keep-alive connections, with the forwarding headers; failures answer
 * the hosted error pages. Names of no zone here are left to the rest of the platform.
 */
export class OriginForwarder {
  private spread = 0;
  private readonly upgraded = new Set<Duplex>();
  /**
   * Per Host header: its hostname and origin, as DNS resolves them now; worked out again after any zone or record
   * change (here or through another node: EdgeZones.generation). Every proxied request asks it first.
   */
  private readonly origins: HostMemo<HostOrigin>;

  constructor(
    private readonly deps: {
      zones: EdgeZones;
      settings: ZoneSettings;
      policy: OriginAddressPolicy;
      pools: OriginPools;
      /** Tenants' outside names: CNAME targets outside our zones, Workers' fetch() and connect() hosts. */
      resolver: TenantResolver;
      /** The cache (edge/cache): asked first for every proxied request, with a way to the origin. */
      cache?: EdgeCache;
      connectTimeoutMs: number;
      /** How long an origin has to answer a WebSocket handshake (--origin-timeout, as for requests). */
      answerTimeoutMs: number;
      log: Logger;
    },
  ) {
    this.origins = new HostMemo(
      (header) => {
        const host = hostOf(header);
        // Frozen: one answer is handed to every request of the host until the next change.
        return host === undefined ? NO_ORIGIN : { host, target: frozen(deps.zones.originOf(host)) };
      },
      () => deps.zones.generation(),
    );
  }

  /** Takes the request when its Host is a name of a zone here (returns true), else leaves it (false). */
  handle(req: IncomingMessage, res: ServerResponse): boolean {
    const { host, target } = this.origins.get(req.headers.host ?? "");
    if (!host) return false;
    // A name with DNS-only records or none is the hostname plan's to answer (its "nothing served here" page).
    if (target.kind === "none" || (target.kind === "unproxied" && target.why !== "paused")) return false;
    const ray = newRay();
    if (target.kind === "unproxied") {
      req.resume();
      sendErrorPage(res, 1001, host, ray);
      return true;
    }
    if (target.kind === "cross-account") {
      req.resume();
      sendErrorPage(res, 1014, host, ray);
      return true;
    }
    if (looped(req.headers, LOOP_TOKEN)) {
      req.resume();
      sendErrorPage(res, 508, host, ray);
      return true;
    }
    const path = originPath(req, host);
    if (path === undefined) {
      req.resume();
      const body = "Bad Request: the request target must be a path, or a URL naming the Host header's host\n";
      res
        .writeHead(400, { "content-type": "text/plain; charset=utf-8", "content-length": Buffer.byteLength(body), connection: "close", "cf-ray": ray })
        .end(body);
      return true;
    }
    const scheme = schemeOf(req);
    if (scheme === "http" && this.deps.settings.on(target.zoneId, "always_use_https")) {
      req.resume();
      res.writeHead(301, { location: `https://${host}${path}`, "content-length": 0, "cf-ray": ray }).end();
      return true;
    }
    const proxied = {
      host,
      path,
      scheme,
      ray,
      clientIp: clientIp(req),
      zoneId: target.zoneId,
      addresses: target.addresses,
      hostnames: target.hostnames,
    };
    if (this.deps.cache) {
      // The cache writes its own heads (from memory, disk, or a fill) and puts the ray on every answer, also on the
      // requests it leaves to forward() (a HIT from memory writes its head in one list, without setHeader).
      if (this.deps.cache.handle(req, res, proxied, (o) => this.fetchForCache(req, proxied, o))) return true;
    }
    this.forward(req, res, proxied);
    return true;
  }

  /**
   * A Worker's subrequest (workerd's global outbound, a request with an absolute URL): to a proxied name of a zone
   * `from` may reach directly (`ownZone`: the zones its Worker is routed in, of its own account), the name's origin
   * through this path, without running the zone's Workers again; anything else goes out as any fetch does
   * (`outbound`), never to another tenant's origin by this shortcut. The Worker's headers are kept; the client's
   * address is the one the Worker passes on in CF-Connecting-IP (as hosted, a Worker may change it).
   */
  subrequest(
    req: IncomingMessage,
    res: ServerResponse,
    from: { accountId: string; script: string; ownZone(zoneId: string): boolean; cf?: string },
    outbound: () => void,
  ): void {
    const url = absoluteUrl(req.url);
    const host = url && normalizeHostname(url.hostname);
    const target = host && /^https?:$/.test(url.protocol) && !url.port ? this.deps.zones.originOf(host) : undefined;
    if (!url || !host || target?.kind !== "proxied" || target.accountId !== from.accountId || !from.ownZone(target.zoneId)) return outbound();
    const ray = newRay();
    if (looped(req.headers, LOOP_TOKEN)) {
      req.resume();
      return sendErrorPage(res, 508, host, ray);
    }
    const given = req.headers["cf-connecting-ip"];
    const proxied: ResolvedOrigin = {
      host,
      path: url.pathname + url.search,
      scheme: url.protocol === "https:" ? "https" : "http",
      ray,
      clientIp: typeof given === "string" && isIP(given) ? given : "",
      zoneId: target.zoneId,
      addresses: target.addresses,
      hostnames: target.hostnames,
    };
    // Through the zone's cache, as hosted, with the Worker's cf cache options over the zone's Cache Rules.
    const overrides = cacheOverridesOf(from.cf);
    if (typeof overrides === "string") {
      req.resume();
      const body = `Bad Request: ${overrides}\n`;
      res.writeHead(400, { "content-type": "text/plain; charset=utf-8", "content-length": Buffer.byteLength(body), "cf-ray": ray }).end(body);
      return;
    }
    if (this.deps.cache) {
      if (this.deps.cache.handle(req, res, proxied, (o) => this.fetchForCache(req, proxied, o), overrides)) return;
    }
    this.forward(req, res, proxied);
  }

  /**
   * A Worker's WebSocket handshake (its fetch() with Upgrade: websocket) to a proxied name of a zone `from` may reach
   * directly (as `subrequest`): taken while the zone's `websockets` setting is on, and relayed to the name's origin as
   * a client's is (`handleUpgrade`), with the Worker's headers. False otherwise: the caller serves it as a plain fetch
   * (the setting off: the origin gets it without Upgrade, as a client's; another host: out as any fetch).
   */
  subrequestUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, from: { accountId: string; ownZone(zoneId: string): boolean }): boolean {
    const url = absoluteUrl(req.url);
    const host = url && normalizeHostname(url.hostname);
    const target = host && /^https?:$/.test(url.protocol) && !url.port ? this.deps.zones.originOf(host) : undefined;
    if (!url || !host || target?.kind !== "proxied" || target.accountId !== from.accountId || !from.ownZone(target.zoneId)) return false;
    if (req.headers.upgrade?.toLowerCase() !== "websocket" || !this.deps.settings.on(target.zoneId, "websockets")) return false;
    const ray = newRay();
    if (looped(req.headers, LOOP_TOKEN)) {
      writeErrorPage(socket, 508, host, ray);
      return true;
    }
    const given = req.headers["cf-connecting-ip"];
    this.upgraded.add(socket);
    socket.once("close", () => this.upgraded.delete(socket));
    socket.on("error", () => socket.destroy());
    const origin = {
      host,
      path: url.pathname + url.search,
      ray,
      zoneId: target.zoneId,
      addresses: target.addresses,
      hostnames: target.hostnames,
      clientIp: typeof given === "string" && isIP(given) ? given : "",
      scheme: url.protocol === "https:" ? ("https" as const) : ("http" as const),
    };
    void this.tunnel(req, socket, head, origin).catch((err: unknown) => {
      this.deps.log.warn({ err, host }, "a Worker's WebSocket to an origin failed");
      socket.destroy();
    });
    return true;
  }

  /**
   * A Worker's subrequest to anywhere but its own zones' origins, as workerd's own network access sent it before:
   * public addresses only (never loopback, private ranges or the platform's own addresses, whatever --origin-allow
   * says), at the URL's port, TLS verified against the system CAs. A refused or failed one cuts the connection, so
   * the Worker's fetch() rejects as it did.
   */
  outbound(req: IncomingMessage, res: ServerResponse, from: { accountId: string; script: string }): void {
    const url = absoluteUrl(req.url);
    if (!url) {
      req.resume();
      res.writeHead(400, { "content-type": "text/plain; charset=utf-8", connection: "close" }).end("Bad Request: not an absolute http(s) URL\n");
      return;
    }
    const https = url.protocol === "https:";
    const hostname = url.hostname.replace(/^\[(.*)\]$/, "$1");
    const port = Number(url.port || (https ? 443 : 80));
    const hasBody = req.headers["transfer-encoding"] !== undefined || Number(req.headers["content-length"] ?? 0) > 0;
    void this.resolvePublic(from.accountId, hostname).then((address) => {
      if (!address || res.destroyed) {
        // As workerd logged its own refusals: one line per refused subrequest, naming the script and the host.
        if (!address) this.deps.log.info({ script: from.script, host: hostname }, "subrequest refused: not a public address (or the name does not resolve)");
        req.resume();
        return void res.destroy();
      }
      if (!hasBody) req.resume();
      relay(this.deps.pools.pool({ address, servername: hostname, mode: https ? "strict" : "off", port }), res, {
        path: url.pathname + url.search,
        method: req.method ?? "GET",
        headers: passedRequestHeaders(req.rawHeaders, HOST, ["host", url.host]),
        body: hasBody ? req : null,
        failed: () => res.destroy(),
      });
    });
  }

  /**
   * A socket a Worker opens (connect(), a CONNECT to `target`, host:port): to a public address only, as workerd's own
   * network access allowed; then bytes both ways. Refused or failed: a 502 and the tunnel closed (connect() fails).
   * A name is looked up under the account of the script that opened it (its allowance, as its fetch() calls).
   */
  connectOut(target: string, socket: Duplex, head: Buffer, from: { accountId: string }): void {
    const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(target);
    const refuse = () => void socket.end("HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n");
    const port = Number(m?.[3]);
    if (!m || !(port > 0 && port < 65536)) return refuse();
    void this.resolvePublic(from.accountId, m[1] ?? m[2]).then((address) => {
      if (!address || socket.destroyed) return refuse();
      const out = netConnect({ host: address, port });
      this.upgraded.add(socket);
      const timer = setTimeout(() => out.destroy(), this.deps.connectTimeoutMs);
      out.once("connect", () => {
        clearTimeout(timer);
        socket.write("HTTP/1.1 200 Connection Established\r\n\r\n");
        if (head.length) out.write(head);
        out.pipe(socket);
        socket.pipe(out);
      });
      out.on("error", () => (out.connecting ? refuse() : socket.destroy()));
      out.once("close", () => {
        clearTimeout(timer);
        socket.end();
      });
      socket.once("close", () => {
        this.upgraded.delete(socket);
        out.destroy();
      });
    });
  }

  /** The first public address a name (or an address) resolves to, looked up for `account`; undefined when none. */
  private async resolvePublic(account: string, hostname: string): Promise<string | undefined> {
    const addresses = isIP(hostname) ? [hostname] : await this.deps.resolver.addresses(account, hostname);
    return addresses.find((a) => this.deps.policy.publicOnly(a));
  }

  /**
   * Takes a WebSocket handshake for a proxied name while its zone's `websockets` setting is on: the handshake goes
   * to the origin with the forwarding headers, then bytes pass both ways untouched. With the setting off the upgrade
   * is not taken, and the request is forwarded as an ordinary one (without Upgrade).
   */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const { host, target } = this.origins.get(req.headers.host ?? "");
    if (!host || req.headers.upgrade?.toLowerCase() !== "websocket") return false;
    if (target.kind === "none" || (target.kind === "unproxied" && target.why !== "paused")) return false;
    const ray = newRay();
    if (target.kind === "unproxied") {
      writeErrorPage(socket, 1001, host, ray);
      return true;
    }
    if (target.kind === "cross-account") {
      writeErrorPage(socket, 1014, host, ray);
      return true;
    }
    if (!this.deps.settings.on(target.zoneId, "websockets")) return false;
    if (looped(req.headers, LOOP_TOKEN)) {
      writeErrorPage(socket, 508, host, ray);
      return true;
    }
    const path = originPath(req, host);
    if (path === undefined) {
      socket.end("HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
      return true;
    }
    this.upgraded.add(socket);
    socket.once("close", () => this.upgraded.delete(socket));
    socket.on("error", () => socket.destroy());
    const origin = {
      host,
      path,
      ray,
      zoneId: target.zoneId,
      addresses: target.addresses,
      hostnames: target.hostnames,
      clientIp: clientIp(req),
      scheme: schemeOf(req),
    };
    void this.tunnel(req, socket, head, origin).catch((err: unknown) => {
      this.deps.log.warn({ err, host }, "a WebSocket to an origin failed");
      socket.destroy();
    });
    return true;
  }

  closeUpgraded(): void {
    for (const s of this.upgraded) s.destroy();
    this.upgraded.clear();
  }

  /**
   * The addresses to try, in order: the record's, and the CNAME targets outside our zones resolved by the
   * TenantResolver for the zone's account; only those the address policy allows. A code instead when there is none.
   */
  private async addresses(zoneId: string, addresses: string[], hostnames: string[]): Promise<string[] | EdgeErrorCode> {
    const all = [...addresses];
    // A zone deleted meanwhile: its lookups still count against one key, never against another account's.
    const account = this.deps.zones.accountOf(zoneId) ?? `zone ${zoneId}`;
    for (const name of hostnames) all.push(...(await this.deps.resolver.addresses(account, name)));
    // Spread: each request starts at the next address.
    return this.pick(all);
  }

  /**
   * Sends `req` to its resolved origin and relays the answer into `res` (core/http/relay.ts, the path Workers' traffic
   * takes too): the addresses in turn while connections are refused, the 52x page when it fails. The interface the
   * cache (edge/cache) sits in front of: the request, where it goes, and the answer's sink.
   */
  forward(req: IncomingMessage, res: ServerResponse, origin: ResolvedOrigin): void {
    const addresses = origin.hostnames.length === 0 ? this.pick(origin.addresses) : undefined;
    if (addresses) return this.send(req, res, origin, addresses);
    void this.addresses(origin.zoneId, origin.addresses, origin.hostnames).then(
      (found) => this.send(req, res, origin, found),
      (err: unknown) => {
        this.deps.log.error({ err, host: origin.host }, "forwarding to an origin failed");
        forwardedErrorPage(res, 520, origin.host, origin.ray);
      },
    );
  }

  private send(req: IncomingMessage, res: ServerResponse, r: ResolvedOrigin, addresses: string[] | EdgeErrorCode): void {
    if (!Array.isArray(addresses)) {
      req.resume();
      return forwardedErrorPage(res, addresses, r.host, r.ray);
    }
    const mode = this.deps.settings.ssl(r.zoneId);
    const headers = originRequestHeaders(req.rawHeaders, { host: r.host, clientIp: r.clientIp, scheme: r.scheme, ray: r.ray, loopToken: LOOP_TOKEN });
    const hasBody = req.headers["transfer-encoding"] !== undefined || Number(req.headers["content-length"] ?? 0) > 0;
    if (!hasBody) req.resume();
    // The ray, and the cache's status when it left the request here, go into the answer's head list (relay.ts).
    const cacheStatus = forwardedCacheStatus(res);
    const answerHeaders = cacheStatus ? ["cf-ray", r.ray, "cf-cache-status", cacheStatus] : ["cf-ray", r.ray];
    const attempt = (i: number) => {
      const target: OriginTarget = { address: addresses[i], servername: r.host, mode };
      relay(this.deps.pools.pool(target), res, {
        path: r.path,
        method: req.method ?? "GET",
        headers,
        body: hasBody ? req : null,
        answerHeaders,
        dropAnswerHeaders: ORIGIN_ONLY_ANSWER_HEADERS,
        failed: (err, answered) => {
          if (answered) return void res.destroy();
          // Only a connection that never opened is tried elsewhere, and only when no body was read for it.
          if (connectFailed(err) && !hasBody && i + 1 < addresses.length) return attempt(i + 1);
          if (hasBody && !req.complete) req.resume();
          const code = failureCode(err);
          if (code === 520) this.deps.log.warn({ err, host: r.host }, "origin answered badly");
          forwardedErrorPage(res, code, r.host, r.ray);
        },
      });
    };
    attempt(0);
  }

  /** The record's addresses to try, in order, when they need no resolving: those the policy allows, spread. */
  private pick(addresses: string[]): string[] | EdgeErrorCode {
    if (addresses.length === 0) return 523;
    if (addresses.length === 1) return this.deps.policy.allowed(addresses[0]) ? addresses : 1000;
    const allowed = addresses.filter((a) => this.deps.policy.allowed(a));
    if (allowed.length === 0) return 1000;
    const start = this.spread++ % allowed.length;
    return [...allowed.slice(start), ...allowed.slice(0, start)].slice(0, MAX_TRIES);
  }

  /** The cache's way to the origin: the client's request as GET, with the headers the cache drops and adds. */
  private async fetchForCache(
    req: IncomingMessage,
    r: { host: string; path: string; scheme: "http" | "https"; ray: string; clientIp: string; zoneId: string; addresses: string[]; hostnames: string[] },
    o: Parameters<FetchOrigin>[0],
  ): Promise<OriginAnswer> {
    const addresses = await this.addresses(r.zoneId, r.addresses, r.hostnames);
    if (!Array.isArray(addresses)) return { failure: addresses };
    const raw: string[] = [];
    for (let i = 0; i < req.rawHeaders.length; i += 2) if (!o.drop.has(req.rawHeaders[i].toLowerCase())) raw.push(req.rawHeaders[i], req.rawHeaders[i + 1]);
    const headers = originRequestHeaders(raw, { host: r.host, clientIp: r.clientIp, scheme: r.scheme, ray: r.ray, loopToken: LOOP_TOKEN });
    for (const [name, value] of o.set) headers.push(name, value);
    const mode = this.deps.settings.ssl(r.zoneId);
    let lastError: unknown;
    for (const address of addresses) {
      try {
        const answer = await this.deps.pools
          .pool({ address, servername: r.host, mode })
          .request({ path: r.path, method: "GET", headers, body: null, signal: o.signal });
        return { status: answer.statusCode, headers: cacheableHeaders(answer.headers), body: answer.body };
      } catch (err) {
        lastError = err;
        if (!connectFailed(err)) break;
      }
    }
    const code = failureCode(lastError);
    if (code === 520) this.deps.log.warn({ err: lastError, host: r.host }, "origin answered badly");
    return { failure: code };
  }

  private async tunnel(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    r: { host: string; path: string; ray: string; zoneId: string; addresses: string[]; hostnames: string[]; clientIp: string; scheme: "http" | "https" },
  ): Promise<void> {
    const addresses = await this.addresses(r.zoneId, r.addresses, r.hostnames);
    if (!Array.isArray(addresses)) return writeErrorPage(socket, addresses, r.host, r.ray);
    const mode = this.deps.settings.ssl(r.zoneId);
    const target: OriginTarget = { address: addresses[0], servername: r.host, mode };
    const tls = mode === "full" || mode === "strict";
    const port = tls ? 443 : 80;
    const origin: Socket = tls ? tlsConnect({ host: target.address, port, ...this.deps.pools.tlsOptions(target) }) : netConnect({ host: target.address, port });
    const timer = setTimeout(
      () => origin.destroy(Object.assign(new Error("connect timeout"), { code: "UND_ERR_CONNECT_TIMEOUT" })),
      this.deps.connectTimeoutMs,
    );
    const headers = originRequestHeaders(req.rawHeaders, {
      host: r.host,
      clientIp: r.clientIp,
      scheme: r.scheme,
      ray: r.ray,
      loopToken: LOOP_TOKEN,
      upgrade: true,
    });
    let lines = `${req.method} ${r.path} HTTP/1.1\r\n`;
    for (let i = 0; i < headers.length; i += 2) lines += `${headers[i]}: ${headers[i + 1]}\r\n`;
    let connected = false;
    let refusedUpgrade = false;
    let answerTimer: NodeJS.Timeout | undefined;
    origin.once(tls ? "secureConnect" : "connect", () => {
      connected = true;
      clearTimeout(timer);
      origin.write(lines + "\r\n");
      // The client's bytes reach the origin only once it has switched protocols (101). Before that, or when it answers
      // otherwise, they would be read as further HTTP requests on the edge's connection, past the edge's header rules
      // (a smuggled request with its own Host or a forged CF-Connecting-IP).
      // An origin that never answers the handshake gets 524, as a request would, instead of holding both sockets.
      answerTimer = setTimeout(() => {
        refusedUpgrade = true;
        origin.destroy();
        writeErrorPage(socket, 524, r.host, r.ray);
      }, this.deps.answerTimeoutMs);
      awaitOriginHead(origin, (answer) => {
        clearTimeout(answerTimer);
        if (answer === undefined) {
          refusedUpgrade = true;
          return writeErrorPage(socket, 520, r.host, r.ray);
        }
        socket.write(answer.received);
        if (answer.switched) {
          if (head.length) origin.write(head);
          origin.pipe(socket);
          socket.pipe(origin);
          return;
        }
        // Not upgraded: the origin's answer reaches the client, then both close; nothing more of the client's is sent.
        refusedUpgrade = true;
        origin.pipe(socket);
        origin.end();
      });
    });
    origin.on("error", (err) => {
      clearTimeout(timer);
      if (!connected) writeErrorPage(socket, failureCode(err), r.host, r.ray);
      else socket.destroy();
    });
    origin.once("close", () => {
      clearTimeout(answerTimer);
      if (refusedUpgrade) socket.end();
      else socket.destroy();
    });
    socket.once("close", () => origin.destroy());
  }
}
