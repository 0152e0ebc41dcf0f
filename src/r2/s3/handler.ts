import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import { finished } from "node:stream";
import type { AuthService } from "../../core/auth/auth-service.js";
import type { Principal } from "../../core/auth/principal.js";
import { unreachableDependency } from "../../core/errors/dependency.js";
import { newRequestId } from "../../core/http/app.js";
import type { Logger } from "../../core/logger.js";
import type { R2CorsRule, R2Store } from "../store.js";
import { addressOf, isOnS3Host, looksLikeBucket, type S3Address } from "./addressing.js";
import { S3Call, sendS3Error } from "./call.js";
import type { S3Config } from "./config.js";
import { corsResponseHeaders, matchingRule, preflightHeaders, requestedHeaders } from "./cors.js";
import { fromStoreError, S3Error, S3Errors } from "./errors.js";
import { operationOf } from "./router.js";
import type { OperationMetrics, TrackedOperation } from "../../core/metrics/operations.js";
import { whenOperationEnds, type R2Operation } from "../operations-dataset.js";
import { parseQuery, readSignature, verifySignature, type QueryPairs } from "./sigv4.js";

/**
 * The S3 API of R2 on the edge port. It takes a request before the v4 API's router when the request is S3's:
 * signed with SigV4 (Authorization: AWS4-HMAC-SHA256, or a presigned URL), a browser's CORS preflight for a
 * bucket, or anything addressed to the S3 host name. Everything else is left to the other routes.
 */
export interface S3HandlerDeps {
  store: R2Store;
  auth: AuthService;
  config: S3Config;
  log: Logger;
  /** Counts each request as the S3 operation it is, once known (r2/metrics.ts). */
  metrics?: OperationMetrics;
  /** Told of every authenticated operation as its answer ends (r2OperationsAdaptiveGroups). */
  onOperation?: (e: R2Operation) => void;
}

/** Query parameters of presigned URLs that are the signature itself, not headers it stands for. */
const SIGNATURE_PARAMS = new Set([
  "x-amz-algorithm",
  "x-amz-credential",
  "x-amz-date",
  "x-amz-expires",
  "x-amz-signedheaders",
  "x-amz-signature",
  "x-amz-security-token",
  "x-amz-content-sha256",
]);

export function createS3Handler(deps: S3HandlerDeps): (req: IncomingMessage, res: ServerResponse) => boolean {
  return (req, res) => {
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    const rawPath = q < 0 ? url : url.slice(0, q);
    const rawQuery = q < 0 ? "" : url.slice(q + 1);
    const authorization = req.headers.authorization;
    const signed =
      authorization?.startsWith("AWS4-HMAC-SHA256") || authorization?.startsWith("AWS ") || /(^|&)(X-Amz-Algorithm|AWSAccessKeyId)=/.test(rawQuery);
    const preflight = req.method === "OPTIONS" && req.headers.origin !== undefined && req.headers["access-control-request-method"] !== undefined;
    const onS3Host = isOnS3Host(req.headers.host, deps.config.host);
    if (!onS3Host && !signed && !preflight) return false;
    const requestId = newRequestId();
    let address: S3Address | undefined;
    try {
      address = addressOf(req.headers.host, rawPath, deps.config.host);
    } catch (e) {
      if (!onS3Host && !signed) return false;
      answerError(req, res, e as S3Error, requestId, rawPath, {});
      return true;
    }
    if (!address) return false;
    // A preflight for a path that names no bucket (the v4 API's, the AI gateway's) is not ours to answer.
    if (!onS3Host && !signed && (!address.bucket || !looksLikeBucket(address.bucket) || rawPath.startsWith("/client/"))) return false;
    const tracked = deps.metrics?.track(preflight ? "preflight" : "other", "s3", req, res);
    const serving = preflight
      ? answerPreflight(deps, req, res, address, requestId)
      : serve(deps, req, res, address, rawPath, parseQuery(rawQuery), requestId, tracked);
    serving.catch((err: unknown) => {
      const dependency = unreachableDependency(err);
      if (dependency) deps.log.warn({ err: (err as Error).message, requestId, dependency }, "s3 request refused: a dependency is unreachable");
      else deps.log.error({ err, requestId }, "s3 request failed");
      const answer = dependency ? S3Errors.dependencyUnavailable(dependency) : S3Errors.internal(requestId);
      if (!res.headersSent) answerError(req, res, answer, requestId, rawPath, {});
      else res.destroy();
    });
    return true;
  };
}

/** The account a request acts on: the one its host names, else the single account its access key reaches with R2. */
function accountOf(principal: Principal, address: S3Address): string {
  if (address.accountId !== undefined) {
    if (!principal.can(address.accountId, "r2_read")) throw S3Errors.accountNotReached();
    return address.accountId;
  }
  const accounts = principal.accounts().filter((a) => principal.can(a, "r2_read"));
  if (accounts.length === 1) return accounts[0];
  if (accounts.length === 0) throw S3Errors.accountNotReached();
  throw S3Errors.accountNotAddressed(accounts.length);
}

/** Request headers, plus the x-amz-* query parameters of a presigned URL as the headers they stand for. */
function effectiveHeaders(req: IncomingMessage, query: QueryPairs, presigned: boolean): IncomingHttpHeaders {
  if (!presigned) return req.headers;
  const headers: IncomingHttpHeaders = Object.assign(Object.create(null), req.headers);
  for (const [name, value] of query) {
    const lower = name.toLowerCase();
    if (lower.startsWith("x-amz-") && !SIGNATURE_PARAMS.has(lower) && headers[lower] === undefined) headers[lower] = value;
  }
  return headers;
}

async function serve(
  deps: S3HandlerDeps,
  req: IncomingMessage,
  res: ServerResponse,
  address: S3Address,
  rawPath: string,
  query: QueryPairs,
  requestId: string,
  tracked?: TrackedOperation,
) {
  const corsHeaders: Record<string, string> = {};
  let call: S3Call | undefined;
  try {
    const signed = readSignature(req, query);
    if (!signed) throw S3Errors.accessDenied();
    const key = await deps.auth.verifyAccessKey(signed.accessKeyId);
    if (!key) throw S3Errors.invalidAccessKeyId(signed.accessKeyId);
    await verifySignature(req, rawPath, query, signed, key.secret);
    const accountId = accountOf(key.principal, address);
    const params = new Map<string, string>();
    for (const [k, v] of query) if (!params.has(k)) params.set(k, v);
    const headers = effectiveHeaders(req, query, signed.style === "query");
    const operation = operationOf(req.method ?? "GET", address.bucket, address.key, params, headers);
    if (tracked) tracked.op = operation.name;
    if (deps.onOperation) {
      const name = operation.name;
      whenOperationEnds(
        res,
        () => ({ accountId, bucketName: address.bucket ?? "", actionType: name, objectSize: res.statusCode < 300 ? (call?.objectSize ?? 0) : 0 }),
        deps.onOperation,
      );
    }
    if (!key.principal.can(accountId, operation.permission)) throw S3Errors.accessDenied();
    const owner = headers["x-amz-expected-bucket-owner"];
    if (owner !== undefined && owner !== accountId) throw S3Errors.accessDenied();
    call = new S3Call(req, res, deps.store, requestId, key.principal, accountId, address.bucket, address.key, params, headers, signed, key.secret);
    if (address.bucket !== undefined && typeof req.headers.origin === "string") {
      Object.assign(corsHeaders, await corsHeadersFor(deps.store, accountId, address.bucket, req.headers.origin, req.method ?? "GET"));
      Object.assign(call.responseHeaders, corsHeaders);
    }
    await operation.run(call);
  } catch (e) {
    const err =
      e instanceof S3Error
        ? e
        : (fromStoreError(e, { bucket: address.bucket, key: address.key, uploadId: call?.query.get("uploadId") }) ??
          // A client that broke off its upload failed the request, not us.
          (!req.complete && req.destroyed ? S3Errors.incompleteBody() : undefined));
    if (!err) throw e;
    answerError(req, res, err, requestId, rawPath, corsHeaders);
  }
}

/** The CORS headers for a request from `origin`, when a rule of the bucket allows it (none otherwise). */
async function corsHeadersFor(store: R2Store, accountId: string, bucket: string, origin: string, method: string): Promise<Record<string, string>> {
  let rules: R2CorsRule[] | undefined;
  try {
    rules = await store.getBucketCors({ accountId, bucketName: bucket });
  } catch {
    return {};
  }
  const rule = rules && matchingRule(rules, origin, method);
  return rule ? corsResponseHeaders(rule, origin) : {};
}

/**
 * A browser's preflight carries no credentials: the bucket's rules are found by the account the host names, or
 * else by the bucket's name when exactly one account has a bucket of that name with CORS rules.
 */
async function answerPreflight(deps: S3HandlerDeps, req: IncomingMessage, res: ServerResponse, address: S3Address, requestId: string) {
  req.resume();
  const origin = String(req.headers.origin);
  const method = String(req.headers["access-control-request-method"]);
  const headers = requestedHeaders(req.headers["access-control-request-headers"] as string | undefined);
  let rules: R2CorsRule[] | undefined;
  if (address.bucket !== undefined && address.accountId !== undefined) {
    rules = await deps.store.getBucketCors({ accountId: address.accountId, bucketName: address.bucket }).catch(() => undefined);
  } else if (address.bucket !== undefined) {
    const found = await deps.store.corsRulesByBucketName(address.bucket);
    if (found.length === 1) rules = found[0].rules;
  }
  const rule = rules && matchingRule(rules, origin, method, headers);
  if (!rule) return answerError(req, res, S3Errors.corsForbidden(), requestId, req.url ?? "/", {});
  res.writeHead(200, { ...preflightHeaders(rule, origin, headers), "x-amz-request-id": requestId, "content-length": "0" });
  res.end();
}

/** A refused request's body is read to its end (and dropped) up to this size, so the connection stays usable. */
const DRAIN_LIMIT_BYTES = 8 * 1024 * 1024;

function answerError(req: IncomingMessage, res: ServerResponse, err: S3Error, requestId: string, rawPath: string, headers: Record<string, string>): void {
  let resource = rawPath;
  try {
    resource = decodeURIComponent(rawPath);
  } catch {
    // the path as sent
  }
  const send = (extra: Record<string, string>) => sendS3Error(res, err, { requestId, resource, method: req.method, headers: { ...headers, ...extra } });
  if (req.complete) return send({});
  // The body was not read (or not all of it): a small one is drained first, so that the client, which may still
  // be sending (after a 100 Continue), reads the answer; a larger one is not read, and the connection closes.
  const declared = Number(req.headers["content-length"]);
  if (req.destroyed || !(declared <= DRAIN_LIMIT_BYTES)) return send({ connection: "close" });
  finished(req, () => send({}));
  req.resume();
}
