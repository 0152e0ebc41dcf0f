/**
 * Two kinds of failure travel through the platform:
 * - EdgeError: a request the client got wrong (or may not make); it becomes a v4 envelope with a status.
 * - UserError: a CLI user got something wrong; it becomes one clear line on stderr and exit code 1.
 * Anything else is a bug: logged with its stack, answered as an internal error, never shown raw.
 */

export interface ErrorDetail {
  code: number;
  message: string;
  error_chain?: { code: number; message: string }[];
  source?: { pointer: string };
}

export class EdgeError extends Error {
  readonly status: number;
  readonly errors: ErrorDetail[];
  /** Extra top-level fields some clients expect next to `errors` (e.g. the AI gateway's `error`). */
  readonly extra?: Record<string, unknown>;

  constructor(
    status: number,
    code: number,
    message: string,
    opts: { chain?: ErrorDetail["error_chain"]; pointer?: string; extra?: Record<string, unknown> } = {},
  ) {
    super(message);
    this.status = status;
    const detail: ErrorDetail = { code, message };
    if (opts.chain?.length) detail.error_chain = opts.chain;
    if (opts.pointer) detail.source = { pointer: opts.pointer };
    this.errors = [detail];
    this.extra = opts.extra;
  }

  static many(status: number, errors: ErrorDetail[]): EdgeError {
    const e = new EdgeError(status, errors[0]?.code ?? 10000, errors[0]?.message ?? "error");
    e.errors.splice(0, e.errors.length, ...errors);
    return e;
  }
}

/** Codes shared by every area; each area keeps its own specific codes beside its routes. */
export const Codes = {
  internal: 10002,
  badRequest: 10001,
  validation: 10001,
  malformedJson: 6007,
  requestTimeout: 10408,
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

export const notFound = (code: number, what: string) => new EdgeError(404, code, what);
export const badRequest = (code: number, message: string, pointer?: string) => new EdgeError(400, code, message, { pointer });
