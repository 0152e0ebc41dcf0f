import type { IncomingMessage, ServerResponse } from "node:http";
import { EdgeError } from "../core/errors.js";
import { readBody } from "../core/http/body.js";
import { bulkGet } from "./bulk.js";
import { bodyTooLarge, KV_LIMITS, KvCodes, numberParam } from "./limits.js";
import type { KvStore } from "./store.js";
import { MAX_JSON_DEPTH, parseUserJson } from "../core/http/json-input.js";

export interface KvBindingTarget {
  accountId: string;
  namespaceId: string;
}

export type KvBindingHandler = (ns: KvBindingTarget, req: IncomingMessage, res: ServerResponse) => void;

/**
 * Serves the protocol of workerd's KV binding (what its KV client sends and expects) for one namespace per
 * request. The caller (the loopback binding server) has already decided which namespace the request is for,
 * from a header workerd injects; nothing in the request itself is trusted to name it.
 */
export function createKvBindingHandler(store: KvStore): KvBindingHandler {
  return (ns, req, res) => {
    handle(store, ns, req, res).catch((err: unknown) => fail(res, err));
  };
}

async function handle(store: KvStore, ns: KvBindingTarget, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (!store.getNamespace(ns.accountId, ns.namespaceId)) throw new EdgeError(404, KvCodes.namespaceNotFound, "namespace not found");
  const url = new URL(req.url ?? "/", "http://binding");
  const method = req.method ?? "GET";
  if (url.pathname === "/" && method === "GET") return list(store, ns.namespaceId, url, res);
  if (url.pathname === "/bulk/get" && method === "POST") return bulkGetCall(store, ns.namespaceId, req, res);
  const key = keyFromPath(url);
  if (method === "GET") {
    const entry = await store.get(ns.namespaceId, key);
    if (!entry) return send(res, 404, "Not Found");
    const headers: Record<string, string | number> = { "content-type": "application/octet-stream", "content-length": entry.value.length };
    // Header values travel as raw UTF-8 bytes; Node writes strings as latin1, so hand it the bytes that way.
    if (entry.metadata !== null) headers["cf-kv-metadata"] = Buffer.from(JSON.stringify(entry.metadata), "utf8").toString("latin1");
    if (entry.expiration !== null) headers["cf-expiration"] = entry.expiration;
    res.writeHead(200, headers);
    res.end(entry.value);
    return;
  }
  if (method === "PUT") {
    const body = await readBody(req, KV_LIMITS.valueBytes, bodyTooLarge("value"));
    const metaHeader = req.headers["cf-kv-metadata"];
    let metadata: unknown;
    if (typeof metaHeader === "string" && metaHeader !== "") {
      try {
        metadata = parseUserJson(Buffer.from(metaHeader, "latin1"), MAX_JSON_DEPTH, "keep");
      } catch (e) {
        throw new EdgeError(400, KvCodes.invalidMetadata, `CF-KV-Metadata is not valid JSON: ${(e as Error).message}`);
      }
    }
    await store.put(ns.namespaceId, key, body, {
      expiration: numberParam(url.searchParams.get("expiration"), "expiration"),
      expirationTtl: numberParam(url.searchParams.get("expiration_ttl"), "expiration_ttl"),
      metadata,
    });
    return send(res, 200, "");
  }
  if (method === "DELETE") {
    await store.delete(ns.namespaceId, key);
    return send(res, 200, "");
  }
  throw new EdgeError(405, KvCodes.badRequest, `method ${method} is not part of the KV binding protocol`);
}

function keyFromPath(url: URL): string {
  const raw = url.pathname.slice(1);
  // workerd always percent-encodes keys and says so; without the flag the path is taken as it is.
  if (url.searchParams.get("urlencoded") !== "true") return raw;
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new EdgeError(400, KvCodes.invalidKey, "key is not valid percent-encoding");
  }
}

function list(store: KvStore, namespaceId: string, url: URL, res: ServerResponse): void {
  const limitParam = url.searchParams.get("key_count_limit");
  const result = store.list(namespaceId, {
    prefix: url.searchParams.get("prefix") ?? undefined,
    cursor: url.searchParams.get("cursor") || undefined,
    limit: limitParam === null ? undefined : Number(limitParam),
  });
  sendJson(res, { ...result, cacheStatus: null });
}

async function bulkGetCall(store: KvStore, namespaceId: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  let body: unknown;
  try {
    body = parseUserJson(await readBody(req, 1024 * 1024, bodyTooLarge("bulk get body")));
  } catch (e) {
    if (e instanceof EdgeError) throw e;
    throw new EdgeError(400, KvCodes.badRequest, `bulk get body must be JSON: ${(e as Error).message}`);
  }
  sendJson(res, await bulkGet(store, namespaceId, body));
}

function sendJson(res: ServerResponse, value: unknown): void {
  const body = Buffer.from(JSON.stringify(value), "utf8");
  res.writeHead(200, { "content-type": "application/json", "content-length": body.length });
  res.end(body);
}

function send(res: ServerResponse, status: number, text: string, reason?: string): void {
  const body = Buffer.from(text, "utf8");
  if (reason) res.statusMessage = reason;
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8", "content-length": body.length });
  res.end(body);
}

/** workerd shows `KV <OP> failed: <status> <reason>` to the script, so the reason carries our message. */
function fail(res: ServerResponse, err: unknown): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (err instanceof EdgeError) {
    // Reason phrases must be one line of latin1; keep the message readable within that.
    const reason = err.message.replace(/[^\x20-\x7e]/g, "?").slice(0, 200);
    send(res, err.status, JSON.stringify({ success: false, errors: err.errors }), reason);
    return;
  }
  send(res, 500, "internal error", "Internal Server Error");
}
