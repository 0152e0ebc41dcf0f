import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import type { AuthService } from "../auth/auth-service.js";
import type { Principal } from "../auth/principal.js";
import { CoreErrors, EdgeError } from "../errors.js";
import { dependencyRefusal } from "../errors/dependency.js";
import { toEnvelope } from "../errors/render.js";
import type { Logger } from "../logger.js";
import type { DependencyHealth } from "../backends.js";
import type { EdgeService } from "../service.js";
import { assertRouteDeclaresPermission, guardRoute } from "./guard.js";
import { drainRefusedBody } from "./body.js";
import { parseUserJson } from "./json-input.js";
import { answerAndClose, answerClientError, frameworkErrorAnswer, MAX_HEADER_BYTES, MAX_URL_BYTES, refuseLongUrl, refuseOnSocket } from "./transport-errors.js";
import type { ConnectionLimits } from "./connection-limits.js";
import type { Readiness } from "./readiness.js";
import { StalledBodies } from "./stalled-bodies.js";
import { serveUpgradeAsRequest } from "./upgrade.js";

declare module "fastify" {
  interface FastifyRequest {
    principal: Principal;
  }
  interface FastifyInstance {
    /** Every route of the v4 API as registered (method, path under /client/v4): the surface check reads it. */
    apiRoutes: readonly ApiRoute[];
  }
}

export interface ApiRoute {
  method: string;
  /** With Fastify's parameters, e.g. /accounts/:account_id/queues */
  url: string;
}

/**
 * The edge's one decision by Host (src/edge/hostnames/dispatch.ts): every request and upgrade goes there first,
 * before Fastify's routes.
 */
export interface HostDispatch {
  /** Answers the request itself, or returns false for Fastify's routes (v4 API, dashboard, /healthz). */
  request(req: IncomingMessage, res: ServerResponse): boolean;
  /** Takes an upgrade, or returns false: it is then served as an ordinary request. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean;
}

export interface AppOptions {
  log: Logger;
  /** Decides by Host which services a request reaches. */
  dispatch: HostDispatch;
  auth: AuthService;
  services: readonly EdgeService[];
  /** Largest request body (bytes) a route accepts unless it sets its own limit. */
  bodyLimit: number;
  /** A request body that stops arriving this long (ms) is refused; 60 s unless given. */
  bodyIdleMs?: number;
  /** The least a request body must bring, in bytes a second over each bodyIdleMs window; 500 unless given, 0: none. */
  bodyMinBytesPerSecond?: number;
  /** How long (ms) a request head (request line and headers) may take to arrive; 66 s unless given. */
  headTimeoutMs?: number;
  /** Limits on the edge port's connections (shared with the HTTPS port, which counts its own from accept); none unless given. */
  connections?: ConnectionLimits;
  /** Whether the node takes traffic yet (readiness.ts); always, unless given. */
  readiness?: Readiness;
  /** The state of PostgreSQL and the object store, when the node uses them (/healthz reports it). */
  health?: () => Promise<DependencyHealth>;
  /**
   * Runs on every /client/v4 request before the guard: brings this node's in-memory copies of what the request's path
   * names (a zone) up to every change committed before the request, through any node (the bus's barrier, then a read
   * of a zone the node never heard of), so the guard and the handler alike read the client's own writes (platform.ts).
   */
  catchUp?: (req: FastifyRequest) => Promise<void>;
  /**
   * Awaited before a /client/v4 request that may have changed something (any method but GET and HEAD) answers: the
   * edge threads have then applied it (platform.ts), so the client's next request is served with it by every loop.
   */
  changesApplied?: () => Promise<void>;
}

export const newRequestId = () => randomBytes(8).toString("hex");

/** Sends an EdgeError as a v4 envelope on a raw response (for handlers that run outside Fastify). */
export function sendRawError(res: ServerResponse, err: EdgeError): void {
  const body = JSON.stringify(toEnvelope(err));
  res.writeHead(err.status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
}

/** The refusal a framework error stands for, or undefined when it is a fault of ours. */
function toEdgeError(err: FastifyError | Error): EdgeError | undefined {
  if (err instanceof EdgeError) return err;
  const unavailable = dependencyRefusal(err);
  if (unavailable) return unavailable;
  const fe = err as FastifyError;
  switch (fe.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return CoreErrors.bodyTooLarge();
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return CoreErrors.unsupportedMediaType();
    case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
      return CoreErrors.contentLengthMismatch();
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return CoreErrors.malformedJson("the body is empty");
  }
  if (fe.validation) return CoreErrors.invalidInput(fe.message);
  if (typeof fe.statusCode === "number" && fe.statusCode >= 400 && fe.statusCode < 500) {
    return CoreErrors.badRequest(fe.message, fe.statusCode);
  }
  return undefined;
}

/**
 * Builds the edge HTTP server: one port, where the dispatch by Host goes first (Workers, the AI gateway, S3, tenants'
 * hostnames), then /client/v4 (authenticated v4 API), then public routes (/healthz, the dashboard).
 */
export async function buildEdgeApp(opts: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: opts.log,
    genReqId: (req) => {
      const incoming = req.headers["x-request-id"];
      return typeof incoming === "string" && /^[A-Za-z0-9-]{1,64}$/.test(incoming) ? incoming : newRequestId();
    },
    bodyLimit: opts.bodyLimit,
    // KV keys (512 bytes) and R2 keys (1,024 bytes) arrive percent-encoded in the path: up to 3 characters a byte.
    routerOptions: { maxParamLength: 16_384 },
    // Requests that fail before routing (parse errors, bad paths) get envelopes too.
    clientErrorHandler: answerClientError,
    frameworkErrors: (err, _req, reply) => {
      const api = frameworkErrorAnswer(err);
      void (reply as FastifyReply).status(api.status).type("application/json").send(toEnvelope(api));
    },
    serverFactory: (handler) => {
      const stalledBodies = new StalledBodies({ idleMs: opts.bodyIdleMs ?? 60_000, minBytesPerSecond: opts.bodyMinBytesPerSecond ?? 500 });
      const connections = opts.connections;
      const listener = (req: IncomingMessage, res: ServerResponse) => {
        const refusal = connections?.refusalFor(req.socket);
        if (refusal) return answerAndClose(res, refusal);
        if (refuseLongUrl(req, res)) return;
        if (opts.readiness?.refuse(req, res)) return;
        stalledBodies.watch(req, res);
        if (opts.dispatch.request(req, res)) return;
        handler(req, res);
      };
      const headTimeoutMs = opts.headTimeoutMs ?? 66_000;
      const server = createServer(
        // Node looks for heads past their time every connectionsCheckingInterval (30 s unless given): a quarter of
        // the limit keeps a slow head's close within 1.25x of it.
        { maxHeaderSize: MAX_HEADER_BYTES, connectionsCheckingInterval: Math.min(Math.max(headTimeoutMs / 4, 50), 30_000) },
        listener,
      );
      connections?.install(server);
      server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
        const refusal = connections?.refusalFor(req.socket);
        if (refusal) return refuseOnSocket(socket, refusal);
        if (opts.readiness?.refuseUpgrade(socket)) return;
        if ((req.url?.length ?? 0) <= MAX_URL_BYTES && opts.dispatch.upgrade(req, socket, head)) return;
        serveUpgradeAsRequest(req, socket, listener);
      });
      server.on("close", () => stalledBodies.close());
      server.keepAliveTimeout = 65_000;
      // From the head's first byte to its end, however it trickles in (Node cuts it with a 408, answerClientError).
      server.headersTimeout = headTimeoutMs;
      server.requestTimeout = 0; // uploads of large objects may legitimately take long
      return server;
    },
  });

  // Empty JSON bodies are tolerated (some clients send a content-type on GET/DELETE); broken or too deeply
  // nested JSON is a 400.
  app.addContentTypeParser("application/json", { parseAs: "buffer" }, (_req, body: Buffer, done) => {
    if (body.length === 0) return done(null, undefined);
    try {
      done(null, parseUserJson(body));
    } catch (e) {
      done(CoreErrors.malformedJson((e as Error).message), undefined);
    }
  });

  app.addHook("onSend", async (req, reply) => {
    reply.header("x-request-id", req.id);
  });

  app.setErrorHandler(async (err: FastifyError, req: FastifyRequest, reply: FastifyReply) => {
    // A body refused for its declared length before it was read: read the rest first (bounded), so the client sees
    // the 413 rather than a reset (Fastify asked for the connection to close; once drained it need not).
    if (err.code === "FST_ERR_CTP_BODY_TOO_LARGE" && !req.raw.complete) {
      if (await drainRefusedBody(req.raw)) reply.removeHeader("connection");
      else if (req.raw.destroyed) return reply.hijack();
    }
    // A route that failed reading a body its client broke off (closed the connection, or sent bytes that are not
    // HTTP) failed because of the client: whatever the stream error says, that is a 400, not a fault of ours.
    const brokenOff = !req.raw.complete && req.raw.destroyed;
    const api = toEdgeError(err) ?? (brokenOff ? CoreErrors.bodyIncomplete() : undefined);
    if (api) {
      if (api.status >= 500) req.log.error({ err }, "request failed");
      return reply.status(api.status).type("application/json").send(toEnvelope(api));
    }
    req.log.error({ err }, "unexpected error");
    return reply
      .status(500)
      .type("application/json")
      .send(toEnvelope(CoreErrors.internal(req.id)));
  });

  app.setNotFoundHandler((req, reply) => {
    return reply.status(404).send(toEnvelope(CoreErrors.routeNotFound(req.url.split("?")[0])));
  });

  // /readyz and /healthz (the same answer): 503 until the node is ready (every deployed Worker runs, routes, Custom
  // Domains and certificates are loaded) and again once it is stopping, and while a dependency is unreachable, so a
  // load balancer sends requests to other nodes.
  const health = opts.health;
  const readiness = opts.readiness;
  const probe = async (_req: FastifyRequest, reply: FastifyReply) => {
    const state = readiness?.state ?? "ready";
    const dependencies = health && (await health());
    const reachable = !dependencies || Object.values(dependencies).every((s) => s === "ok");
    const ok = state === "ready" && reachable;
    if (!ok) reply.header("retry-after", "1");
    const status = state !== "ready" ? state : reachable ? "ok" : "degraded";
    return reply.status(ok ? 200 : 503).send({ status, ...(dependencies && { dependencies }) });
  };
  app.get("/healthz", probe);
  app.get("/readyz", probe);

  const apiRoutes: ApiRoute[] = [];
  app.decorate("apiRoutes", apiRoutes);
  await app.register(
    async (v4) => {
      v4.decorateRequest("principal", undefined as unknown as Principal);
      v4.addHook("onRequest", async (req) => {
        if (req.routeOptions.config.ownCredentials && req.routeOptions.config.permission === "self") return;
        const principal = opts.auth.authenticate(req.headers as Record<string, string | undefined>);
        req.principal = principal instanceof Promise ? await principal : principal;
      });
      if (opts.catchUp) v4.addHook("preHandler", opts.catchUp);
      const changesApplied = opts.changesApplied;
      if (changesApplied)
        v4.addHook("onSend", async (req, _reply, payload) => {
          if (req.method !== "GET" && req.method !== "HEAD") await changesApplied();
          return payload;
        });
      v4.addHook("preHandler", guardRoute);
      v4.addHook("onRoute", assertRouteDeclaresPermission);
      v4.addHook("onRoute", (route) => {
        for (const method of [route.method].flat()) apiRoutes.push({ method, url: route.url.slice("/client/v4".length) });
      });
      for (const s of opts.services) {
        if (s.registerApi) await v4.register(async (scope) => s.registerApi!(scope));
      }
    },
    { prefix: "/client/v4" },
  );

  for (const s of opts.services) {
    if (s.registerPublic) await app.register(async (scope) => s.registerPublic!(scope));
  }
  return app as unknown as FastifyInstance;
}
