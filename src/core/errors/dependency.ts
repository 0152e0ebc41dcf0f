import { CoreErrors, EdgeError } from "../errors.js";

/** The services a node depends on in distributed mode; the names are what a 503 shows. */
export type Dependency = "PostgreSQL" | "object store";

const SOURCE = Symbol("edge.dependency");
type Tagged = { [SOURCE]?: Dependency };

/**
 * Marks an error as raised by a dependency's client (core/db/postgres.ts and core/content/s3-store.ts do it for
 * every error they pass on). Only the source knows which dependency failed: a refused connection looks the same
 * from PostgreSQL and from S3. Returns the error, for `throw markDependency(...)`.
 */
export function markDependency<E>(err: E, dependency: Dependency): E {
  if (err !== null && typeof err === "object" && !(err instanceof EdgeError) && !Object.hasOwn(err, SOURCE)) {
    try {
      Object.defineProperty(err, SOURCE, { value: dependency, enumerable: false });
    } catch {
      // A frozen error stays unmarked: it is then reported as a fault of ours (500), never hidden.
    }
  }
  return err;
}

/** Network failures of any client: the other side is down, unreachable or cut the connection. */
const NETWORK_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN", "ECONNABORTED"]);

function errnoCode(err: unknown): string | undefined {
  const e = err as { code?: unknown; cause?: unknown; errors?: unknown[] } | undefined;
  if (typeof e?.code === "string" && NETWORK_CODES.has(e.code)) return e.code;
  // AggregateError (happy eyeballs over several addresses) and wrapped causes.
  for (const inner of [...(Array.isArray(e?.errors) ? e.errors : []), e?.cause]) {
    if (inner && inner !== err) {
      const code = errnoCode(inner);
      if (code) return code;
    }
  }
  return undefined;
}

/**
 * PostgreSQL cannot serve us: no connection (refused, reset, timed out, pool checkout timed out), the server
 * shutting down (57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now), a connection exception
 * (class 08), or a statement cut by statement_timeout (57014 with that message).
 */
function postgresUnreachable(err: unknown): boolean {
  if (errnoCode(err)) return true;
  const e = err as { code?: unknown; message?: unknown };
  const code = typeof e.code === "string" ? e.code : "";
  if (code === "57P01" || code === "57P02" || code === "57P03" || code.startsWith("08")) return true;
  const message = typeof e.message === "string" ? e.message : "";
  if (code === "57014") return /statement timeout/i.test(message);
  return /timeout exceeded when trying to connect|Connection terminated|Query read timeout|connection error|Client was closed/i.test(message);
}

/** The object store cannot serve us: no answer (network error, timeout) or a 5xx (503 SlowDown included). */
function objectStoreUnreachable(err: unknown): boolean {
  if (errnoCode(err)) return true;
  const e = err as { $metadata?: { httpStatusCode?: number }; name?: unknown };
  const status = e.$metadata?.httpStatusCode;
  if (typeof status === "number") return status >= 500;
  return e.name === "TimeoutError" || e.name === "RequestTimeout" || e.name === "AbortError";
}

/** The dependency whose unreachability `err` reports, or undefined when it is something else. */
export function unreachableDependency(err: unknown): Dependency | undefined {
  const dependency = err !== null && typeof err === "object" ? (err as Tagged)[SOURCE] : undefined;
  if (dependency === "PostgreSQL") return postgresUnreachable(err) ? dependency : undefined;
  if (dependency === "object store") return objectStoreUnreachable(err) ? dependency : undefined;
  return undefined;
}

/** The 503 for an error that means a dependency is unreachable (the one mapping every surface uses). */
export function dependencyRefusal(err: unknown): EdgeError | undefined {
  const dependency = unreachableDependency(err);
  return dependency && CoreErrors.dependencyUnavailable(dependency);
}
