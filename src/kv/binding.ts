import type { IncomingMessage, ServerResponse } from "node:http";
import { EdgeError } from "../core/errors.js";
import { sendBindingError, statusText, textReply, type BindingErrorFormat } from "../core/errors/render.js";
import { readBody } from "../core/http/body.js";
import { MAX_JSON_DEPTH, parseUserJson } from "../core/http/json-input.js";
import { bulkGet } from "./bulk/get.js";
import { KvErrors } from "./errors.js";
import { KV_LIMITS } from "./limits.js";
import type { KvStore } from "./store.js";
import { numberParam } from "./validation.js";

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
    handle(store, ns, req, res).catch((err: unknown) => sendBindingError(res, err, KV_BINDING_ERRORS));
  };
}

/**
 * How workerd's KV binding reads a failed call: the status, the message as the reason phrase (one line of
 * printable ASCII; workerd shows it to the script as `KV GET failed: 404 <reason>`), and the v4 envelope's
 * `{success, errors}` as a text body. A bug is a plain 500.
 */
export const KV_BINDING_ERRORS: BindingErrorFormat = {
  refusal: (err) => textReply(err.status, JSON.stringify({ success: false, errors: err.errors }), statusText(err.message, 200)),
  bug: () => textReply(500, "internal error", "Internal Server Error"),
};

async function handle(store: KvStore, ns: KvBindingTarget, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (!(await store.getNamespace(ns.accountId, ns.namespaceId))) throw KvErrors.namespaceNotFound();
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
    const body = await readBody(req, KV_LIMITS.valueBytes, KvErrors.bodyTooLarge("value"));
    const metaHeader = req.headers["cf-kv-metadata"];
    let metadata: unknown;
    if (typeof metaHeader === "string" && metaHeader !== "") {
      try {
        metadata = parseUserJson(Buffer.from(metaHeader, "latin1"), MAX_JSON_DEPTH, "keep");
      } catch (e) {
        throw KvErrors.metadataUnparsable("CF-KV-Metadata", (e as Error).message);
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
  throw KvErrors.methodNotAllowed(method);
}

function keyFromPath(url: URL): string {
  const raw = url.pathname.slice(1);
  // workerd always percent-encodes keys and says so; without the flag the path is taken as it is.
  if (url.searchParams.get("urlencoded") !== "true") return raw;
  try {
    return decodeURIComponent(raw);
  } catch {
    throw KvErrors.keyNotPercentEncoded();
  }
}

async function list(store: KvStore, namespaceId: string, url: URL, res: ServerResponse): Promise<void> {
  const limitParam = url.searchParams.get("key_count_limit");
  const result = await store.list(namespaceId, {
    prefix: url.searchParams.get("prefix") ?? undefined,
    cursor: url.searchParams.get("cursor") || undefined,
    limit: limitParam === null ? undefined : Number(limitParam),
  });
  sendJson(res, { ...result, cacheStatus: null });
}

async function bulkGetCall(store: KvStore, namespaceId: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  let body: unknown;
  try {
    body = parseUserJson(await readBody(req, KV_LIMITS.bulkGetBodyBytes, KvErrors.bodyTooLarge("bulk get body")));
  } catch (e) {
    if (e instanceof EdgeError) throw e;
    throw KvErrors.bulkGetBodyNotJson((e as Error).message);
  }
  sendJson(res, await bulkGet(store, namespaceId, body));
}

function sendJson(res: ServerResponse, value: unknown): void {
  const body = Buffer.from(JSON.stringify(value), "utf8");
  res.writeHead(200, { "content-type": "application/json", "content-length": body.length });
  res.end(body);
}

function send(res: ServerResponse, status: number, text: string): void {
  const body = Buffer.from(text, "utf8");
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8", "content-length": body.length });
  res.end(body);
}
