import type { IncomingMessage, ServerResponse } from "node:http";
import type { AuthService } from "../core/auth/auth-service.js";
import type { IdentityStore } from "../core/auth/store.js";
import { EdgeError } from "../core/errors.js";
import { sendRawError } from "../core/http/app.js";
import { isWellFormedPath } from "../core/http/transport-errors.js";
import type { Logger } from "../core/logger.js";
import { AigCodes } from "./codes.js";
import { newLogId } from "./log-id.js";
import { clientGone, modelOfRequest, retryPolicy, type Exchange } from "./exchange.js";
import { takeBody } from "./request-body.js";
import type { Gateway } from "./gateway-schema.js";
import type { GatewayStore } from "./gateway-store.js";
import type { LogWriter } from "./log-store.js";
import type { ProviderRegistry } from "./providers/registry.js";
import type { ProviderAdapter } from "./providers/types.js";
import { upstreamUrl } from "./providers/registry.js";
import type { RateLimiter } from "./rate-limiter.js";
import { queueLog, Relay, answerHeaders, type LogSink } from "./relay.js";
import { cacheKey, type CachedResponse } from "./response-cache.js";
import { gatewayToken, isGatewayHeader, readRequestOptions } from "./request-options.js";
import { forwardHeaders, type Upstreams } from "./upstream.js";
import { handleCompat, handleUniversal } from "./universal.js";
import { emptyUsage } from "./usage.js";

export interface ProxyDeps extends LogSink {
  auth: AuthService;
  identities: IdentityStore;
  gateways: GatewayStore;
  providers: ProviderRegistry;
  upstreams: Upstreams;
  limiter: RateLimiter;
  writer: LogWriter;
  log: Logger;
  bodyLimit: number;
}

/** Settings of the gateway that the hosted gateway creates on first authenticated use of the id "default". */
const DEFAULT_GATEWAY = {
  cache_ttl: 0,
  cache_invalidate_on_update: false,
  collect_logs: true,
  rate_limiting_interval: 0,
  rate_limiting_limit: 0,
  rate_limiting_technique: "fixed",
  authentication: true,
  log_management: null,
  log_management_strategy: null,
  retry_max_attempts: null,
  retry_delay: null,
  retry_backoff: null,
} as const;

const unauthorized = () =>
  new EdgeError(401, AigCodes.unauthorized, "Unauthorized", {
    extra: { error: [{ code: AigCodes.unauthorized, message: "Unauthorized" }], name: "AiGatewayError", httpCode: 401, internalCode: AigCodes.unauthorized },
  });

/**
 * The gateway's hot path: `/v1/{account_id}/{gateway_id}/{provider}/...`, `/v1/{account_id}/{gateway_id}`
 * (universal) and `/v1/{account_id}/{gateway_id}/compat/...`. Authentication is decided first, before
 * anything is logged or forwarded.
 */
export class Proxy {
  /** Upstream URLs (or why there is none) by provider, account and client path: the same few paths repeat. */
  private readonly targets = new Map<string, URL | string>();

  constructor(private readonly d: ProxyDeps) {}

  handle(req: IncomingMessage, res: ServerResponse): void {
    this.serve(req, res).catch((err: unknown) => {
      const api = err instanceof EdgeError ? err : undefined;
      if (!api) this.d.log.error({ err }, "ai-gateway: request failed");
      if (!res.headersSent) sendRawError(res, api ?? new EdgeError(500, 10002, "Internal server error"));
      else res.destroy();
    });
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    const url = req.url!;
    const q = url.indexOf("?");
    const path = q < 0 ? url : url.slice(0, q);
    const search = q < 0 ? "" : url.slice(q);
    if (!isWellFormedPath(path)) throw new EdgeError(400, AigCodes.badPath, "The URL path is not valid percent-encoded UTF-8");
    const segs = path.slice(4).split("/"); // after "/v1/"
    const [accountId, gatewayId, provider] = segs;
    if (!accountId || !gatewayId) throw new EdgeError(404, AigCodes.badPath, "Expected /v1/{account_id}/{gateway_id}/{provider}/...");

    const token = gatewayToken(req.headers);
    let verified = token ? this.d.auth.verifyToken(token) : undefined;
    // A known token is answered from the auth cache without a promise: only a first sight waits for the store.
    if (verified instanceof Promise) verified = await verified;
    const mayRun = !!verified && verified.principal.can(accountId, "ai_gateway_run");
    const gateway = this.gateway(accountId, gatewayId, mayRun) ?? (await this.missingGateway(accountId, gatewayId));
    if (gateway.authentication && !mayRun) throw unauthorized();

    const opts = readRequestOptions(req.headers);
    if (!this.d.limiter.take(`${accountId}/${gatewayId}`, gateway.rate_limiting_limit, gateway.rate_limiting_interval, gateway.rate_limiting_technique)) {
      throw new EdgeError(429, AigCodes.rateLimited, "Rate limited");
    }
    const logging =
      (opts.collectLog ?? gateway.collect_logs) && !this.d.writer.full(accountId, gatewayId, gateway.log_management, gateway.log_management_strategy);
    const ex: Exchange = { req, res, started, ended: 0, arrivedAt: Date.now(), gateway, authenticated: mayRun, opts, logId: logging ? newLogId() : null };

    if (segs.length === 2 || (segs.length === 3 && provider === "")) {
      if (req.method !== "POST") throw new EdgeError(405, AigCodes.badPath, "The universal endpoint takes POST");
      return handleUniversal(ex, this.d);
    }
    if (provider === "compat") return handleCompat(ex, segs.slice(3).join("/"), this.d);
    return this.forwardToProvider(ex, provider, segs.slice(3).join("/"), search);
  }

  private gateway(accountId: string, gatewayId: string, mayRun: boolean): Gateway | undefined {
    const g = this.d.gateways.get(accountId, gatewayId);
    if (g) return g;
    if (gatewayId === "default" && mayRun)
      return this.d.gateways.create(accountId, gatewayId, { ...DEFAULT_GATEWAY }) ?? this.d.gateways.get(accountId, gatewayId)!;
    return undefined;
  }

  /** Why there is no such gateway: the account or the gateway is unknown. */
  private async missingGateway(accountId: string, gatewayId: string): Promise<never> {
    if (!(await this.d.identities.getAccount(accountId))) throw new EdgeError(404, AigCodes.notFound, `Not Found: no account "${accountId}"`);
    throw new EdgeError(404, AigCodes.notFound, `Not Found: no gateway "${gatewayId}" in account ${accountId}`);
  }

  private async forwardToProvider(ex: Exchange, segment: string, rest: string, search: string): Promise<void> {
    const d = this.d;
    const p = d.providers.get(segment);
    if (!p)
      throw new EdgeError(
        400,
        AigCodes.badPath,
        `Unknown provider "${segment}". Known providers: ${d.providers.ids().join(", ")}, and the endpoints compat and universal`,
      );
    const target = this.upstreamUrl(p, ex.gateway.account_id, rest, search);
    if (typeof target === "string") throw new EdgeError(400, AigCodes.badPath, target);
    const { req, opts, gateway } = ex;
    const retry = retryPolicy(ex);
    const headers = forwardHeaders(req.headers, isGatewayHeader);
    const hasBody = req.method !== "GET" && req.method !== "HEAD";

    const ttlSec = opts.cacheTtl ?? (gateway.cache_ttl > 0 ? gateway.cache_ttl : opts.cacheKey ? 300 : 0);
    const caching = hasBody && ttlSec > 0 && !opts.skipCache && req.method === "POST";
    const sent = hasBody ? await takeBody(req, caching || retry.attempts > 1, d.bodyLimit) : { body: null, stream: null, capture: null };
    const body = sent.body;
    if (body) headers["content-length"] = String(body.length);

    let cache: { key: string; ttlMs: number } | undefined;
    const extraHeaders: Record<string, string> = {};
    if (caching) {
      const key = cacheKey(
        opts.cacheKey,
        p.id,
        `${rest}${search}`,
        p.credentialHeaders.map((name) => String(req.headers[name] ?? "")),
        body!,
      );
      cache = { key: `${gateway.account_id}/${gateway.id}:${key}`, ttlMs: ttlSec * 1000 };
      const hit = d.cache.get(cache.key);
      if (hit) return this.answerFromCache(ex, hit, p.id, rest, body!);
      extraHeaders["gw-aig-cache-status"] = "MISS";
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
    if (ex.logId) this.d.queue.defer(() => this.logCacheHit(ex, hit, provider, path, reqBody));
  }

  private logCacheHit(ex: Exchange, hit: CachedResponse, provider: string, path: string, reqBody: Buffer): void {
    const usage = { ...emptyUsage(), tokensIn: 0, tokensOut: 0 };
    usage.model = modelOfRequest(reqBody);
    queueLog(ex, this.d.queue, {
      provider,
      path,
      requestType: null,
      step: null,
      status: hit.status,
      success: true,
      cached: true,
      usage,
      cost: 0,
      costNote: "answered from the cache",
      customCost: false,
      requestBody: reqBody,
      requestSize: reqBody.length,
      responseBody: hit.body,
      responseSize: hit.body.length,
      responseType: typeof hit.headers["content-type"] === "string" ? hit.headers["content-type"] : null,
    });
  }
}
