import type { IncomingMessage, ServerResponse } from "node:http";
import { PassThrough, type Readable } from "node:stream";
import type { Logger } from "../../core/logger.js";
import { normalizeHostname } from "../hostnames/names.js";
import type { EdgeZones } from "../ports.js";
import type { EdgeCache } from "./http-cache.js";
import type { Headers } from "./policy.js";

/** Who makes a Cache API call: the Worker's account and script, and whether a zone is one it is routed in. */
export interface CacheApiCaller {
  accountId: string;
  script: string;
  ownZone(zoneId: string): boolean;
}

/** The most a put's serialized response head may hold (status line and headers): more is not stored. */
const MAX_PUT_HEAD = 64 * 1024;
/** workerd refuses names of 1,024 characters or more; encoded (encodeURIComponent) they may be three times longer. */
const MAX_NAMESPACE_CHARS = 3 * 1024;

/**
 * The Workers Cache API (caches.default, caches.open(name)) on the edge's cache: workerd sends each call to its
 * `cacheApiOutbound` (workers/runtime/capnp-config.ts), the binding server labels it with the script, and this
 * answers it as workerd expects the hosted cache to (workerd's api/cache.c++):
 * - match: `GET <url>` with `Cache-Control: only-if-cached` → the stored response with `CF-Cache-Status: HIT`, or 504
 *   with `MISS`;
 * - put: `PUT <url>` whose body is the serialized response (status line, headers, body) → 204 stored, 413 not;
 * - delete: `PURGE <url>` → 200 removed, 404 none.
 * `CF-Cache-Namespace` names a cache opened with caches.open (URI-encoded). The zone is the one the key's hostname
 * is in, and only when the calling Worker is routed in that zone of its own account: the script's identity, never
 * what it sends, decides whose cache it touches. Any other key (a workers.dev-style hostname, another tenant's
 * name) does nothing, as hosted on workers.dev: match finds nothing, put stores nothing, delete removes nothing.
 */
export class WorkerCacheApi {
  constructor(
    private readonly cache: EdgeCache,
    private readonly zones: EdgeZones,
    private readonly log: Logger,
  ) {}

  handle(req: IncomingMessage, res: ServerResponse, from: CacheApiCaller): void {
    const method = req.method ?? "";
    if (method !== "GET" && method !== "PUT" && method !== "PURGE") {
      req.resume();
      return void res.writeHead(405, { allow: "GET, PUT, PURGE", "content-length": "0" }).end();
    }
    const place = this.place(req, from);
    if (typeof place === "string") {
      req.resume();
      return void res.writeHead(400, { "content-type": "text/plain; charset=utf-8" }).end(`${place}\n`);
    }
    if (method === "GET") {
      req.resume();
      if (!place) return void res.writeHead(504, { "cf-cache-status": "MISS", "content-length": "0" }).end();
      return void this.cache.matchStored(place.key, req, res).catch((err: unknown) => {
        this.log.warn({ err, script: from.script }, "a Cache API match failed");
        if (!res.headersSent) res.writeHead(504, { "cf-cache-status": "MISS", "content-length": "0" }).end();
        else res.destroy();
      });
    }
    if (method === "PURGE") {
      req.resume();
      const removed = place !== undefined && this.cache.removeKey(place.key);
      return void res.writeHead(removed ? 200 : 404, { "content-length": "0" }).end();
    }
    if (!place) {
      req.resume();
      return void res.writeHead(413, { "content-length": "0" }).end();
    }
    // A put cut off by workerd (its way of saying "do not commit") errors the request: not stored, never a crash.
    req.on("error", () => undefined);
    void this.put(req, place)
      .then((stored) => res.writeHead(stored ? 204 : 413, { "content-length": "0" }).end())
      .catch((err: unknown) => {
        this.log.warn({ err, script: from.script }, "a Cache API put failed");
        req.resume();
        if (!res.headersSent) res.writeHead(413, { "content-length": "0" }).end();
      });
  }

  /**
   * Where a call's key lives: its zone, the URL as the cache keys it, and the key; undefined when the Worker has no
   * cache for that URL (not a name of a zone it is routed in); a message when the call is malformed.
   */
  private place(req: IncomingMessage, from: CacheApiCaller): { zoneId: string; url: string; key: string } | undefined | string {
    let u: URL;
    try {
      u = new URL(req.url ?? "");
    } catch {
      return "the Cache API key must be an absolute http(s) URL";
    }
    if (u.protocol !== "http:" && u.protocol !== "https:") return "the Cache API key must be an absolute http(s) URL";
    const given = req.headers["cf-cache-namespace"];
    let namespace: string | undefined;
    if (given !== undefined) {
      const raw = Array.isArray(given) ? given[0] : given;
      if (raw.length > MAX_NAMESPACE_CHARS) return "the cache name is too long";
      try {
        namespace = decodeURIComponent(raw);
      } catch {
        return "the cache name is not valid";
      }
    }
    const host = normalizeHostname(u.hostname);
    const target = this.zones.originOf(host);
    if (target.kind === "none" || target.accountId !== from.accountId || !from.ownZone(target.zoneId)) return undefined;
    // The host as purges name it (lowercase, no trailing dot: `www.example.com.` is the same name, and a key spelled
    // with the dot would be one no purge by URL or host reaches); another port is another resource, the default left out.
    const url = `${u.protocol}//${host}${u.port === "" ? "" : `:${u.port}`}${u.pathname}${u.search === "?" ? "" : u.search}`;
    // Its variant names the cache (proxied traffic's variants are encodings): never an object of proxied traffic.
    const variant = namespace === undefined ? "cache-api" : `cache-api:${namespace}`;
    return { zoneId: target.zoneId, url, key: `${target.zoneId}\n${url}\n${variant}` };
  }

  /** Reads the serialized response a put sends (head, then body) and stores it; answers whether it was stored. */
  private async put(req: IncomingMessage, place: { zoneId: string; url: string; key: string }): Promise<boolean> {
    const head = await readHead(req);
    if (!head) {
      req.resume();
      return false;
    }
    const parsed = parseResponseHead(head.head);
    if (!parsed) {
      req.resume();
      return false;
    }
    const body = new PassThrough();
    if (head.rest.length > 0) body.write(head.rest);
    req.once("error", (err) => body.destroy(err));
    req.once("aborted", () => body.destroy(new Error("the put's body broke off")));
    req.pipe(body);
    const result = await this.cache.storePut(place, { status: parsed.status, headers: storableHeaders(parsed.headers), body });
    return result.stored;
  }
}

/**
 * The head of the put's payload (up to its blank line) and the bytes read past it, leaving `req` paused (an async
 * iterator would destroy it on leaving early); undefined when too long or cut.
 */
function readHead(req: Readable): Promise<{ head: string; rest: Buffer } | undefined> {
  return new Promise((resolve) => {
    let buffered = Buffer.alloc(0);
    const done = (value: { head: string; rest: Buffer } | undefined) => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onEnd);
      req.pause();
      resolve(value);
    };
    const onData = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      const end = buffered.indexOf("\r\n\r\n");
      if (end >= 0) return done(end > MAX_PUT_HEAD ? undefined : { head: buffered.toString("latin1", 0, end), rest: buffered.subarray(end + 4) });
      if (buffered.length > MAX_PUT_HEAD) done(undefined);
    };
    const onEnd = () => done(undefined);
    req.on("data", onData);
    req.once("end", onEnd);
    req.once("error", onEnd);
  });
}

/** `HTTP/1.1 200 OK` and its header lines, names lowercased; undefined when it is no response head. */
export function parseResponseHead(head: string): { status: number; headers: Headers } | undefined {
  const lines = head.split("\r\n");
  const m = /^HTTP\/1\.[01] (\d{3})(?: .*)?$/.exec(lines[0]);
  if (!m) return undefined;
  const headers: Headers = Object.create(null) as Headers;
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(":");
    if (colon <= 0) return undefined;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    const prev = headers[name];
    headers[name] = prev === undefined ? value : Array.isArray(prev) ? [...prev, value] : [prev, value];
  }
  return { status: Number(m[1]), headers };
}

/**
 * The stored response's headers as the cache rules read them: workerd serializes the body without chunked encoding
 * even under `Transfer-Encoding: chunked` (its body runs to the end of the put), so that header goes; and
 * `Cache-Control: private=Set-Cookie` (hosted: the way to store a response that sets a cookie) stores it without
 * its Set-Cookie headers instead of not at all.
 */
export function storableHeaders(headers: Headers): Headers {
  const out: Headers = Object.create(null) as Headers;
  for (const [name, value] of Object.entries(headers)) if (name !== "transfer-encoding" && name !== "connection") out[name] = value;
  const cc = out["cache-control"];
  if (cc === undefined) return out;
  const directives = (Array.isArray(cc) ? cc.join(",") : cc).split(",").map((d) => d.trim());
  const privateFields = directives.find((d) => /^private\s*=/i.test(d));
  if (!privateFields) return out;
  const fields = privateFields
    .slice(privateFields.indexOf("=") + 1)
    .replace(/^"|"$/g, "")
    .split(",")
    .map((f) => f.trim().toLowerCase());
  // `private="a, b"` was split on its commas above: the field list is only the one directive's own.
  if (fields.length === 1 && fields[0] === "set-cookie") {
    delete out["set-cookie"];
    out["cache-control"] = directives.filter((d) => d !== privateFields && d !== "").join(", ");
  }
  return out;
}
