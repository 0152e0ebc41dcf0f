import type { IncomingMessage, ServerResponse } from "node:http";
import type { AuthService } from "../../core/auth/auth-service.js";
import type { IdentityStore } from "../../core/auth/store.js";
import { dependencyRefusal } from "../../core/errors/dependency.js";
import { CoreErrors, EdgeError } from "../../core/errors.js";
import { newRequestId, sendRawError } from "../../core/http/app.js";
import { isWellFormedPath } from "../../core/http/transport-errors.js";
import type { Logger } from "../../core/logger.js";
import { AigErrors } from "../errors.js";
import type { GatewayDirectory } from "../gateways/directory.js";
import type { LogCounts } from "../logs/counts.js";
import { newLogId } from "../logs/log-id.js";
import { upstreamUrl } from "../providers/registry.js";
import type { ProviderAdapter } from "../providers/types.js";
import type { Gateway } from "../gateways/store.js";
import { clientGone, retryPolicy, type Exchange } from "./exchange.js";
import type { RateLimiter } from "./rate-limiter.js";
import { answerHeaders, queueLog, Relay } from "./relay.js";
import { gatewayRequestOf } from "../analytics.js";
import { modelOfRequest } from "../logs/draft.js";
import { usageOfJson } from "../metering/usage.js";
import { takeBody } from "./request-body.js";
import { gatewayToken, isGatewayHeader, readRequestOptions } from "./request-options.js";
import { cacheKey, type CachedResponse } from "./response-cache.js";
import { useStoredKey } from "./stored-key.js";
import { handleCompat, handleUniversal, type ForwardDeps } from "./universal.js";
import { forwardHeaders } from "./upstream.js";

/** The answer headers a request without caching adds (shared: most requests add none). */
const NO_EXTRA_HEADERS: Record<string, string> = Object.freeze({}) as Record<string, string>;

interface GatewayProxyDeps extends ForwardDeps {
  auth: AuthService;
  identities: IdentityStore;
  gateways: GatewayDirectory;
  logCounts: LogCounts;
  limiter: RateLimiter;
  log: Logger;
}

/**
 * The gateway's hot path: `/v1/{account_id}/{gateway_id}/{provider}/...`, `/v1/{account_id}/{gateway_id}`
 * (universal) and `/v1/{account_id}/{gateway_id}/compat/...`. Authentication is decided first, before
 * anything is logged or forwarded.
 */
export class GatewayProxy {
  /** Upstream URLs (or why there is none) by provider, account and client path: the same few paths repeat. */
  private readonly targets = new Map<string, URL | string>();

  constructor(private readonly d: GatewayProxyDeps) {}

  handle(req: IncomingMessage, res: ServerResponse): void {
    this.serve(req, res).catch((err: unknown) => {
      // A store that cannot be reached (PostgreSQL) is the core 503 naming it; anything else unexpected is a 500.
      let refusal = err instanceof EdgeError ? err : dependencyRefusal(err);
      if (!refusal) {
        const requestId = newRequestId();
        this.d.log.error({ err, requestId }, "ai-gateway: request failed");
        refusal = CoreErrors.internal(requestId);
      }
      if (!res.headersSent) sendRawError(res, refusal);
      else res.destroy();
    });
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    const url = req.url!;
    const q = url.indexOf("?");
    const path = q < 0 ? url : url.slice(0, q);
    const search = q < 0 ? "" : url.slice(q);
    if (!isWellFormedPath(path)) throw AigErrors.malformedPath();
    const segs = path.slice(4).split("/"); // after "/v1/"
    const [accountId, gatewayId, provider] = segs;
    if (!accountId || !gatewayId) throw AigErrors.pathShape();

    const token = gatewayToken(req.headers);
    let verified = token ? this.d.auth.verifyToken(token) : undefined;
    // A known token is answered from the auth cache without a promise: only a first sight waits for the store.
    if (verified instanceof Promise) verified = await verified;
    const mayRun = !!verified && verified.principal.can(accountId, "ai_gateway_run");
    // Settings come from memory; only a gateway not seen since it changed (or since start) waits for the store.
    let gateway = this.d.gateways.cached(accountId, gatewayId) ?? this.loadGateway(accountId, gatewayId, mayRun);
    if (gateway instanceof Promise) gateway = await gateway;
    if (gateway.authentication && !mayRun) throw AigErrors.unauthorized();

    const opts = readRequestOptions(req.headers);
    // Counted in memory when embedded; a shared counter (a promise) only for a gateway with a limit.
    let allowed = this.d.limiter.take(gateway);
    if (allowed instanceof Promise) allowed = await allowed;
    if (!allowed) throw AigErrors.rateLimited();
    let logging = opts.collectLog ?? gateway.collect_logs;
    if (logging) {
      let full = this.d.logCounts.isFull(gateway);
      if (full instanceof Promise) full = await full;
      logging = !full;
    }
    const ex: Exchange = { req, res, started, ended: 0, arrivedAt: Date.now(), gateway, authenticated: mayRun, opts, logId: logging ? newLogId() : null };

    if (segs.length === 2 || (segs.length === 3 && provider === "")) {
      if (req.method !== "POST") throw AigErrors.universalMethod();
      return handleUniversal(ex, this.d);
    }
    if (provider === "compat") return handleCompat(ex, segs.slice(3).join("/"), this.d);
    return this.forwardToProvider(ex, provider, segs.slice(3).join("/"), search);
  }

  /**
   * A gateway not in memory: read from the store, or made when it is the account's "default" and the request may
   * run it. Otherwise the answer says whether the account or the gateway is unknown.
   */
  private async loadGateway(accountId: string, gatewayId: string, mayRun: boolean): Promise<Gateway> {
    const g = await this.d.gateways.get(accountId, gatewayId);
    if (g) return g;
    if (gatewayId === "default" && mayRun) return this.d.gateways.createDefault(accountId);
    if (!(await this.d.identities.getAccount(accountId))) throw AigErrors.accountNotFound(accountId);
    throw AigErrors.gatewayNotInAccount(gatewayId, accountId);
  }

  private async forwardToProvider(ex: Exchange, segment: string, rest: string, search: string): Promise<void> {
    const d = this.d;
    const p = d.providers.get(segment);
    if (!p) throw AigErrors.unknownProviderSegment(segment, d.providers.ids());
    const target = this.upstreamUrl(p, ex.gateway.account_id, rest, search);
    if (typeof target === "string") throw AigErrors.providerPath(target);
    const { req, opts, gateway } = ex;
    const retry = retryPolicy(ex);
    const headers = forwardHeaders(req.headers, isGatewayHeader);
    const storing = useStoredKey(ex, p, headers, d.keys);
    if (storing) await storing;
    const hasBody = req.method !== "GET" && req.method !== "HEAD";

    const ttlSec = opts.cacheTtl ?? (gateway.cache_ttl > 0 ? gateway.cache_ttl : opts.cacheKey ? 300 : 0);
    const caching = hasBody && ttlSec > 0 && !opts.skipCache && req.method === "POST";
    const sent = hasBody ? await takeBody(req, caching || retry.attempts > 1, d.bodyLimit) : { body: null, stream: null, capture: null };
    const body = sent.body;
    if (body) headers["content-length"] = String(body.length);

    let cache: { key: string; ttlMs: number } | undefined;
    let extraHeaders: Record<string, string> = NO_EXTRA_HEADERS;
    if (caching) {
      const key = cacheKey(
        opts.cacheKey,
        p.id,
        `${rest}${search}`,
        p.credentialHeaders.map((name) => String(headers[name] ?? "")), // a stored key used counts as the caller's
        body!,
      );
      cache = { key: `${gateway.account_id}/${gateway.id}:${key}`, ttlMs: ttlSec * 1000 };
      const hit = d.cache.get(cache.key);
      if (hit) return this.answerFromCache(ex, hit, p.id, rest, body!);
      extraHeaders = { "gw-aig-cache-status": "MISS" };
    }

    const relay = new Relay(
      ex,
      {
        provider: p.id,
        path: rest,
        requestType: null,
        step: null,
        requestBody: () => body ?? sent.capture?.buffer() ?? null,
        requestSize: () => body?.length ?? sent.capture?.size ?? 0,
        cache,
        extraHeaders,
      },
      d,
    );
    await d.upstreams.send({ url: target, method: req.method!, headers, body: body ?? sent.stream, retry, signal: clientGone(ex) }, relay);
  }

  private upstreamUrl(p: ProviderAdapter, accountId: string, rest: string, search: string): URL | string {
    const key = `${p.id}\n${accountId}\n${rest}${search}`;
    let target = this.targets.get(key);
    if (target === undefined) {
      target = upstreamUrl(p, accountId, rest, search);
      if (this.targets.size >= 1000) this.targets.clear();
      this.targets.set(key, target);
    }
    return target;
  }

  private answerFromCache(ex: Exchange, hit: CachedResponse, provider: string, path: string, reqBody: Buffer): void {
    const headers = answerHeaders(ex, hit.headers, { "gw-aig-cache-status": "HIT", "content-length": String(hit.body.length) });
    ex.res.writeHead(hit.status, headers);
    ex.res.end(hit.body);
    ex.ended = performance.now();
    const counted = this.d.requests.listener;
    if (counted) {
      // The tokens a cached answer carries are what the cache saved (cachedTokensIn/Out).
      const usage = usageOfJson(hit.body);
      const base = { accountId: ex.gateway.account_id, gateway: ex.gateway.id, provider, requestModel: usage.model ? null : modelOfRequest(reqBody) };
      counted(gatewayRequestOf(base, usage, { cached: true, cacheLookup: true, errored: false }, this.d.requests.prices));
    }
    if (ex.logId)
      queueLog(ex, this.d.queue, {
        provider,
        path,
        requestType: null,
        step: null,
        status: hit.status,
        success: true,
        outcome: "cached",
        usage: null,
        requestBody: reqBody,
        requestSize: reqBody.length,
        responseBody: hit.body,
        responseSize: hit.body.length,
        responseType: typeof hit.headers["content-type"] === "string" ? hit.headers["content-type"] : null,
      });
  }
}
