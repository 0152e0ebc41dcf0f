/**
 * Two kinds of failure travel through the platform:
 * - EdgeError: a request the client got wrong (or may not make). The same refusal is shown by the v4 API (an
 *   envelope with a status), by a workerd binding (its protocol's error reply) and by the CLI (one line, exit 1);
 *   `core/errors/render.ts` turns it into each of those.
 * - UserError: a CLI user got something wrong; it becomes one clear line on stderr and exit code 1.
 * Anything else is a bug: logged with its stack, answered as an internal error, never shown raw.
 *
 * Each area keeps its refusals in its own `errors.ts`: a code table (`<Area>Codes`) and one named factory per
 * refusal (`<Area>Errors`), so every message is written once. This file is core's.
 */

export interface ErrorDetail {
  code: number;
  message: string;
  error_chain?: { code: number; message: string }[];
  source?: { pointer: string };
}

export interface EdgeErrorOptions {
  /** Finer errors behind this one (the v4 `error_chain`). */
  chain?: ErrorDetail["error_chain"];
  /** The input field at fault (the v4 `source.pointer`), e.g. "/ttl". */
  pointer?: string;
  /** Extra top-level fields some clients expect next to `errors` (e.g. the AI gateway's `error`). */
  extra?: Record<string, unknown>;
}

export class EdgeError extends Error {
  readonly status: number;
  readonly errors: ErrorDetail[];
  /** Extra top-level fields some clients expect next to `errors` (e.g. the AI gateway's `error`). */
  readonly extra?: Record<string, unknown>;

  constructor(status: number, code: number, message: string, opts: EdgeErrorOptions = {}) {
    super(message);
    this.status = status;
    const detail: ErrorDetail = { code, message };
    if (opts.chain?.length) detail.error_chain = opts.chain;
    if (opts.pointer) detail.source = { pointer: opts.pointer };
    this.errors = [detail];
    this.extra = opts.extra;
  }

  static many(status: number, errors: ErrorDetail[]): EdgeError {
    const e = new EdgeError(status, errors[0]?.code ?? Codes.authentication, errors[0]?.message ?? "error");
    e.errors.splice(0, e.errors.length, ...errors);
    return e;
  }
}

/** Codes shared by every area; each area keeps its own in its errors.ts. */
export const Codes = {
  internal: 10002,
  badRequest: 10001,
  validation: 10001,
  malformedJson: 6007,
  requestTimeout: 10408,
  tooManyConnections: 10429,
  nodeFull: 10503,
  bodyTooLarge: 10413,
  uriTooLong: 10414,
  headersTooLarge: 10431,
  routeNotFound: 7003,
  noRoute: 7000,
  missingAuth: 9106,
  invalidHeaders: 6003,
  invalidEmailHeader: 6102,
  invalidKeyHeader: 6103,
  invalidAuthorizationHeader: 6111,
  authentication: 10000,
  unsupportedMediaType: 10415,
} as const;

const invalidHeader = (code: number, message: string) => new EdgeError(400, Codes.invalidHeaders, "Invalid request headers", { chain: [{ code, message }] });

/** Core's refusals: authentication, bodies, routing and the HTTP transport. Areas use these for the same situations. */
export const CoreErrors = {
  /** An account the caller cannot see, a permission it lacks: the same answer, so ids cannot be probed. */
  authentication: () => new EdgeError(403, Codes.authentication, "Authentication error"),
  missingCredentials: () => new EdgeError(400, Codes.missingAuth, "Missing X-Auth-Key, X-Auth-Email or Authorization headers"),
  invalidAuthorizationHeader: () => invalidHeader(Codes.invalidAuthorizationHeader, "Invalid format for Authorization header"),
  invalidEmailHeader: () => invalidHeader(Codes.invalidEmailHeader, "Invalid format for X-Auth-Email header"),
  invalidKeyHeader: () => invalidHeader(Codes.invalidKeyHeader, "Invalid format for X-Auth-Key header"),

  /** A body that is not JSON (`detail` is the parser's message, or why the body is empty). */
  malformedJson: (detail: string) => new EdgeError(400, Codes.malformedJson, `Malformed JSON in request body: ${detail}`),
  bodyTooLarge: () => new EdgeError(413, Codes.bodyTooLarge, "Request body is larger than this endpoint accepts"),
  unsupportedMediaType: () => new EdgeError(415, Codes.unsupportedMediaType, "Unsupported content type"),
  contentLengthMismatch: () => new EdgeError(400, Codes.badRequest, "Content-Length does not match the body"),
  /** The client stopped sending before its body was complete. */
  bodyIncomplete: () => new EdgeError(400, Codes.badRequest, "The request body ended before it was complete"),
  /**
   * Input that breaks a rule. `code` and `status` let a generic reader (zod validation, pagination, query values)
   * answer with the code of the area whose route called it.
   */
  invalidInput: (message: string, opts: { pointer?: string; code?: number; status?: number } = {}) =>
    new EdgeError(opts.status ?? 400, opts.code ?? Codes.validation, message, { pointer: opts.pointer }),
  /** A 4xx the framework raised itself, with its message. */
  badRequest: (message: string, status = 400) => new EdgeError(status, Codes.badRequest, message),

  routeNotFound: (path: string) =>
    EdgeError.many(404, [
      { code: Codes.routeNotFound, message: `Could not route to ${path}, perhaps your object identifier is invalid?` },
      { code: Codes.noRoute, message: "No route for that URI" },
    ]),
  /** A bug: the request id lets an operator find the stack in the log; the stack itself is never shown. */
  internal: (requestId: string) => new EdgeError(500, Codes.internal, `Internal server error (request id ${requestId})`),
  shuttingDown: (what: string) => new EdgeError(503, Codes.internal, `the platform is shutting down; send the ${what} again`),
  /**
   * PostgreSQL or the object store cannot be reached from this node (core/errors/dependency.ts decides which
   * failures mean that). Nothing was half-written: a transaction that did not commit left nothing.
   */
  dependencyUnavailable: (dependency: string) =>
    new EdgeError(503, Codes.internal, `${dependency} is unreachable from this node; the request was not carried out, retry it later`),

  uriTooLong: (maxBytes: number) => new EdgeError(414, Codes.uriTooLong, `The URL is longer than ${maxBytes} bytes`),
  badPath: () => new EdgeError(400, Codes.badRequest, "The URL path is not valid percent-encoded UTF-8"),
  headersTooLarge: (maxBytes: number) => new EdgeError(431, Codes.headersTooLarge, `The request line and headers are larger than ${maxBytes} bytes`),
  requestHeadTimeout: () => new EdgeError(408, Codes.requestTimeout, "The request head did not arrive in time"),
  requestBodyStalled: (idleSeconds: number) => new EdgeError(408, Codes.requestTimeout, `The request body stopped arriving (nothing for ${idleSeconds} s)`),
  requestBodyTooSlow: (minBytesPerSecond: number, windowSeconds: number) =>
    new EdgeError(408, Codes.requestTimeout, `The request body arrived slower than ${minBytesPerSecond} bytes a second over ${windowSeconds} s`),
  tooManyConnectionsFromClient: (max: number) =>
    new EdgeError(429, Codes.tooManyConnections, `This client address has ${max} connections open to the platform, the most it may; close one first`),
  tooManyConnections: () => new EdgeError(503, Codes.nodeFull, "The platform has as many connections open as it takes; retry later"),
  /** Before every deployed Worker, route, Custom Domain and certificate is loaded (and again once stopping). */
  notReady: (state: "starting" | "stopping") =>
    new EdgeError(
      503,
      Codes.nodeFull,
      state === "starting" ? "The platform is starting; retry in a moment" : "The platform is shutting down; retry on another node",
    ),
  invalidUrlCharacters: () => new EdgeError(400, Codes.badRequest, "The request line has a URL with characters HTTP does not allow (percent-encode them)"),
  notHttp: (parserCode: string | undefined) => new EdgeError(400, Codes.badRequest, `The request is not valid HTTP/1.1 (${parserCode ?? "parse error"})`),
};

export class UserError extends Error {
  /** Printed after the message, e.g. a hint or the command's usage line. */
  readonly hint?: string;
  constructor(message: string, hint?: string) {
    super(message);
    this.hint = hint;
  }
}

/** A CLI usage error: the words of the call are off. The command's help is shown with it. */
export class UsageError extends UserError {}
