import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { request as httpRequest } from "node:http";
import { startTestPlatform, type TestPlatform } from "../../core/testing/platform.js";
import { createAccount } from "../../workers/testing/helpers.js";
import { loopbackBlock } from "../testing/origins.js";
import { startScriptedOrigin } from "./testing/origin.js";

/**
 * A hostile client and a hostile tenant against the cache's newest surface (the memory tier, the purges, zones made
 * again): two accounts, the platform's edge port, real origins on loopback.
 */
describe("hostile clients and tenants never get another's answer or keep a purged one", () => {
  const addr = loopbackBlock();
  let p: TestPlatform;
  let port: number;
  let originA: Awaited<ReturnType<typeof startScriptedOrigin>>;
  let originB: Awaited<ReturnType<typeof startScriptedOrigin>>;
  let zoneA: string;
  let accountB: string;
  const host = "www.hostile-a.example";
  const cleanups: (() => unknown)[] = [];
  const hooks = { after: (fn: () => unknown) => void cleanups.push(fn) };

  /** A GET with the request target exactly as given (raw paths: dot segments, percent-encodings). */
  const get = (path: string, h = host, headers: Record<string, string> = {}) =>
    new Promise<{ status: number; cache: unknown; text: string }>((resolve, reject) => {
      const req = httpRequest({ host: "127.0.0.1", port, path, headers: { host: h, ...headers }, agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.once("error", reject);
        res.once("end", () => resolve({ status: res.statusCode ?? 0, cache: res.headers["cf-cache-status"], text: Buffer.concat(chunks).toString() }));
      });
      req.once("error", reject);
      req.end();
    });

  before(async () => {
    originA = await startScriptedOrigin(hooks, addr(1));
    originB = await startScriptedOrigin(hooks, addr(2));
    p = await startTestPlatform({ args: ["--origin-allow", "127.0.0.0/8", "--origin-timeout", "3"] });
    port = Number(new URL(p.url).port);
    zoneA = (await p.api("POST", "/zones", { name: "hostile-a.example", account: { id: p.accountId } })).body.result.id;
    const r = await p.api("POST", `/zones/${zoneA}/dns_records`, { type: "A", name: "www", content: addr(1), proxied: true });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    accountB = await createAccount(p, "hostile-b");
  });
  after(async () => {
    await p?.dispose();
    for (const fn of cleanups) await fn();
  });

  it("a purge by URL reaches every spelling of the path a client can make the cache key (dot segments, %-encodings)", async () => {
    let version = 1;
    // The origin, as most do, serves one resource for every spelling of its path.
    const spellings = ["/secret.js", "/a/../secret.js", "/./secret.js", "/a/%2e%2e/secret.js", "//secret.js", "/%73ecret.js", "/secret%2ejs", "/secret%2Ejs"];
    for (const s of spellings) originA.route(s, (_req, res) => res.writeHead(200, { "cache-control": "max-age=600" }).end(`secret v${version}`));
    originA.route("/q.js", (_req, res) => res.writeHead(200, { "cache-control": "max-age=600" }).end(`q v${version}`));
    const queried = ['/q.js?v="1"', "/q.js?v=<1>", "/q.js?it's"];
    // A client warms every spelling (twice: the second from memory).
    for (const s of [...spellings, ...queried]) {
      await get(s);
      await get(s);
    }
    version = 2;
    const r = await p.api("POST", `/zones/${zoneA}/purge_cache`, { files: [`https://${host}/secret.js`, `http://${host}/secret.js`] });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    for (const s of spellings) {
      const after = await get(s);
      assert.equal(after.text, "secret v2", `${s} after the purge of /secret.js (${String(after.cache)})`);
    }
    // The owner names a URL with a query as a browser shows it; the purge reaches what clients sent.
    const q = await p.api("POST", `/zones/${zoneA}/purge_cache`, { files: queried.map((s) => `http://${host}${s}`) });
    assert.equal(q.status, 200, JSON.stringify(q.body));
    for (const s of queried) assert.equal((await get(s)).text, "q v2", `${s} after its purge`);
    // The usual spelling is cached as before.
    await get("/secret.js");
    assert.equal((await get("/secret.js")).cache, "HIT");
  });

  it("a zone deleted and made again by another account with the same name never sees the old one's objects, from memory or disk", async () => {
    const name = "reused.example";
    const zone1 = (await p.api("POST", "/zones", { name, account: { id: p.accountId } })).body.result.id as string;
    await p.api("POST", `/zones/${zone1}/dns_records`, { type: "A", name: "www", content: addr(1), proxied: true });
    originA.route("/logo.png", (_req, res) => res.writeHead(200, { "cache-control": "max-age=600" }).end("A's logo"));
    originB.route("/logo.png", (_req, res) => res.writeHead(200, { "cache-control": "max-age=600" }).end("B's logo"));
    await get("/logo.png", `www.${name}`);
    assert.equal((await get("/logo.png", `www.${name}`)).cache, "HIT");
    assert.equal((await get("/logo.png", `www.${name}`)).text, "A's logo");
    assert.equal((await p.api("DELETE", `/zones/${zone1}`)).status, 200);
    const zone2 = (await p.api("POST", "/zones", { name, account: { id: accountB } }, p.keyHeaders())).body.result.id as string;
    assert.notEqual(zone2, zone1);
    const rec = await p.api("POST", `/zones/${zone2}/dns_records`, { type: "A", name: "www", content: addr(2), proxied: true }, p.keyHeaders());
    assert.equal(rec.status, 200, JSON.stringify(rec.body));
    const first = await get("/logo.png", `www.${name}`);
    assert.equal(first.text, "B's logo");
    assert.equal(first.cache, "MISS");
  });
});
