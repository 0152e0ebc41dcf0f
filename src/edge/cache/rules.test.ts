import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { request } from "undici";
import { createLogger } from "../../core/logger.js";
import type { CacheRules, CacheSettings, RuleRequest } from "../ports.js";
import { loopbackBlock } from "../testing/origins.js";
import { EdgeCache, forwardedCacheStatus, type FetchOrigin } from "./http-cache.js";
import { startScriptedOrigin } from "./testing/origin.js";

/**
 * The cache obeys the Cache Rules port (edge/rules builds the real one): here a small implementation of the port
 * answers by path, and the cache runs in-process in front of a real origin on loopback, behind a real HTTP server.
 */
test("the cache obeys CacheSettings from the CacheRules port", async (t) => {
  const address = loopbackBlock()(1);
  const origin = await startScriptedOrigin(t, address);
  const dir = mkdtempSync(join(tmpdir(), "edge-cache-rules-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const byPath: Record<string, CacheSettings> = {
    "/page.html": { cache: true },
    "/never.js": { cache: false },
    "/ttl.html": { cache: true, edge_ttl: { mode: "override_origin", default: 3600 }, browser_ttl: { mode: "override_origin", default: 60 } },
    "/status.html": { cache: true, edge_ttl: { mode: "respect_origin", status_code_ttl: [{ status_code_range: { from: 500, to: 599 }, value: 30 }] } },
    "/origin-only.js": { edge_ttl: { mode: "bypass_by_default" } },
  };
  const seen: RuleRequest[] = [];
  const rules: CacheRules = {
    hasRules: () => true,
    settingsFor: (_zoneId, r) => {
      seen.push(r);
      return Object.hasOwn(byPath, r.path) ? byPath[r.path] : {};
    },
  };
  const zoneSettings = { developmentMode: () => false, cacheLevel: () => "aggressive", browserCacheTtl: () => 14400 };
  const cache = new EdgeCache({ dir, maxBytes: 10_000_000, maxObjectBytes: 1_000_000 }, zoneSettings, createLogger({ level: "silent" }), rules);
  t.after(() => cache.close());
  const front = createServer((req, res) => {
    const fetchOrigin: FetchOrigin = async (o) => {
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(req.headers)) if (!o.drop.has(name) && typeof value === "string") headers[name] = value;
      for (const [name, value] of o.set) headers[name] = value;
      const answer = await request(`http://${address}${req.url}`, { headers });
      return { status: answer.statusCode, headers: answer.headers as Record<string, string>, body: answer.body };
    };
    const taken = cache.handle(req, res, { zoneId: "z1", host: "www.rules.example", path: req.url ?? "/", scheme: "http", ray: "r" }, fetchOrigin);
    // As the forwarder does: the cache's DYNAMIC/BYPASS verdict goes on the head of the answer it did not take.
    const status = forwardedCacheStatus(res);
    if (!taken) res.writeHead(200, { "x-forwarded-by": "forwarder", ...(status ? { "cf-cache-status": status } : {}) }).end("forwarded");
  });
  await new Promise<void>((resolve) => front.listen(0, "127.0.0.1", resolve));
  t.after(() => new Promise((resolve) => front.close(resolve)));
  const port = (front.address() as AddressInfo).port;
  const get = async (path: string) => {
    const res = await request(`http://127.0.0.1:${port}${path}`);
    return { status: res.statusCode, cache: res.headers["cf-cache-status"], cc: res.headers["cache-control"], text: await res.body.text() };
  };

  origin.route("/page.html", (_req, res) => res.end("html"));
  assert.equal((await get("/page.html")).cache, "MISS", "cache: true makes HTML eligible (cache everything)");
  assert.equal((await get("/page.html")).cache, "HIT");
  assert.deepEqual(seen[0], { scheme: "http", host: "www.rules.example", path: "/page.html", query: "", method: "GET" });

  const never = await get("/never.js");
  assert.equal(never.cache, "BYPASS");
  assert.equal(never.text, "forwarded", "bypass: left to the forwarder");

  origin.route("/ttl.html", (_req, res) => res.writeHead(200, { "cache-control": "no-cache" }).end("ttl"));
  assert.equal((await get("/ttl.html")).cache, "MISS");
  const ttl = await get("/ttl.html");
  assert.equal(ttl.cache, "HIT", "override_origin: stored for the rule's TTL whatever the origin said");
  assert.equal(ttl.cc, "max-age=60", "browser_ttl override_origin");

  origin.route("/status.html", (_req, res) => res.writeHead(503).end("down"));
  await get("/status.html");
  const s = await get("/status.html");
  assert.equal(s.status, 503);
  assert.equal(s.cache, "HIT", "status_code_ttl stores a 503 for 30 s");

  origin.route("/origin-only.js", (_req, res) => res.end("no lifetime"));
  await get("/origin-only.js");
  assert.equal((await get("/origin-only.js")).cache, "BYPASS", "bypass_by_default: the origin gave no lifetime");
  assert.equal(origin.count("/origin-only.js"), 2);
});
