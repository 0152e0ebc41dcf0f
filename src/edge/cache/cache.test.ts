import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { request } from "undici";
import Cloudflare from "cloudflare";
import { startTestPlatform, type TestPlatform } from "../../core/testing/platform.js";
import { eventually } from "../../core/testing/eventually.js";
import { createAccount } from "../../workers/testing/helpers.js";
import { loopbackBlock } from "../testing/origins.js";
import { startScriptedOrigin } from "./testing/origin.js";

/**
 * The cache of proxied traffic against a real origin on loopback, through the platform's edge port: what is stored
 * and for how long, cf-cache-status, revalidation, one origin request for concurrent misses, streaming, stale
 * answers, the zone settings, poisoning, and the purge API (two accounts, the SDK, the CLI).
 */
describe("the edge caches proxied traffic as the hosted default does", () => {
  const addr = loopbackBlock();
  let p: TestPlatform;
  let port: number;
  let origin: Awaited<ReturnType<typeof startScriptedOrigin>>;
  let zone: string;
  let zoneB: string;
  let accountB: string;
  const host = "www.cache-test.example";
  const cleanups: (() => unknown)[] = [];
  const hooks = { after: (fn: () => unknown) => void cleanups.push(fn) };

  const get = async (path: string, headers: Record<string, string> = {}, h = host, method = "GET") => {
    const res = await request(`http://127.0.0.1:${port}${path}`, { method: method as "GET", headers: { host: h, ...headers } });
    return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
  };
  const status = (r: { headers: Record<string, unknown> }) => r.headers["cf-cache-status"];
  const token = async (permissions: string[], accountId: string) => {
    const r = await p.api("POST", "/user/tokens", { name: `t-${permissions.join("-")}`, permissions, account_id: accountId }, p.keyHeaders());
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body.result.value as string;
  };

  before(async () => {
    origin = await startScriptedOrigin(hooks, addr(1));
    p = await startTestPlatform({ args: ["--origin-allow", "127.0.0.0/8", "--origin-timeout", "3"] });
    port = Number(new URL(p.url).port);
    zone = (await p.api("POST", "/zones", { name: "cache-test.example", account: { id: p.accountId } })).body.result.id;
    for (const name of ["www", "img"]) {
      const r = await p.api("POST", `/zones/${zone}/dns_records`, { type: "A", name, content: addr(1), proxied: true });
      assert.equal(r.status, 200, JSON.stringify(r.body));
    }
    accountB = await createAccount(p, "cache-b");
    zoneB = (await p.api("POST", "/zones", { name: "cache-b.example", account: { id: accountB } }, p.keyHeaders())).body.result.id;
    await p.api("POST", `/zones/${zoneB}/dns_records`, { type: "A", name: "www", content: addr(1), proxied: true }, p.keyHeaders());
  });
  after(async () => {
    await p?.dispose();
    for (const fn of cleanups) await fn();
  });

  it("stores a static file (MISS, then HIT with Age), never HTML (DYNAMIC), and hides Cache-Tag", async () => {
    origin.route("/app.js", (_req, res) => res.writeHead(200, { "content-type": "text/javascript", "cache-tag": "Tag-A,shared" }).end("js body"));
    const first = await get("/app.js");
    assert.equal(first.status, 200);
    assert.equal(status(first), "MISS");
    assert.equal(first.text, "js body");
    assert.equal(first.headers["cache-tag"], undefined, "Cache-Tag is the edge's, never the client's");
    const second = await get("/app.js");
    assert.equal(status(second), "HIT");
    assert.equal(second.text, "js body");
    assert.match(String(second.headers.age), /^\d+$/);
    assert.equal(second.headers["cache-tag"], undefined);
    assert.equal(origin.count("/app.js"), 1);
    // The default Browser Cache TTL (4 h) for an answer without Cache-Control.
    assert.equal(second.headers["cache-control"], "max-age=14400");
    await get("/page.html");
    const html = await get("/page.html");
    assert.equal(status(html), "DYNAMIC");
    assert.equal(origin.count("/page.html"), 2);
    const post = await get("/app.js", {}, host, "POST");
    assert.equal(status(post), "DYNAMIC");
  });

  it("a request the cache leaves to the origin has cf-cache-status and cf-ray once each, also on an error page", async () => {
    origin.route("/left.html", (_req, res) => res.writeHead(200, { "content-type": "text/html", "x-origin": "yes" }).end("left"));
    const dynamic = await get("/left.html");
    assert.equal(dynamic.status, 200);
    assert.equal(dynamic.text, "left");
    assert.equal(dynamic.headers["x-origin"], "yes");
    // undici joins a repeated header into an array: a string is one header.
    assert.equal(status(dynamic), "DYNAMIC");
    assert.match(String(dynamic.headers["cf-ray"]), /^[0-9a-f]{16}-EDGE$/);
    const bypass = await get("/left.js", { authorization: "Bearer x" });
    assert.equal(status(bypass), "BYPASS");
    assert.match(String(bypass.headers["cf-ray"]), /^[0-9a-f]{16}-EDGE$/);
    // A name whose origin refuses connections (nothing listens there): 521, with the cache's status too.
    const r = await p.api("POST", `/zones/${zone}/dns_records`, { type: "A", name: "down", content: addr(2), proxied: true });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    let down = await get("/x.html", {}, "down.cache-test.example");
    await eventually(async () => (down = await get("/x.html", {}, "down.cache-test.example")).status === 521, "the new record is proxied");
    assert.equal(status(down), "DYNAMIC");
    assert.match(String(down.headers["cf-ray"]), /^[0-9a-f]{16}-EDGE$/);
    assert.match(down.text, /521/);
  });

  it("obeys the origin: no-store, private and Set-Cookie are not stored (BYPASS); s-maxage wins over max-age", async () => {
    for (const [path, headers] of [
      ["/nostore.css", { "cache-control": "no-store" }],
      ["/private.css", { "cache-control": "private, max-age=600" }],
      ["/cookie.css", { "set-cookie": "a=b" }],
      ["/vary.css", { vary: "User-Agent" }],
    ] as const) {
      origin.route(path, (_req, res) => res.writeHead(200, headers).end("x"));
      assert.equal(status(await get(path)), "BYPASS", path);
      assert.equal(status(await get(path)), "BYPASS", path);
      assert.equal(origin.count(path), 2, path);
    }
    origin.route("/short.css", (_req, res) => res.writeHead(200, { "cache-control": "max-age=3600, s-maxage=1" }).end("v"));
    assert.equal(status(await get("/short.css")), "MISS");
    assert.equal(status(await get("/short.css")), "HIT");
    await sleep(1100);
    assert.equal(status(await get("/short.css")), "EXPIRED");
    assert.equal(origin.count("/short.css"), 2);
  });

  it("uses the hosted default TTLs by status: a 404 is kept, a 500 is not", async () => {
    origin.route("/gone.png", (_req, res) => res.writeHead(404).end("no"));
    origin.route("/broken.png", (_req, res) => res.writeHead(500).end("err"));
    assert.equal(status(await get("/gone.png")), "MISS");
    const again = await get("/gone.png");
    assert.equal(again.status, 404);
    assert.equal(status(again), "HIT");
    await get("/broken.png");
    await get("/broken.png");
    assert.equal(origin.count("/broken.png"), 2);
  });

  it("revalidates no-cache with the stored ETag: a 304 from the origin answers REVALIDATED", async () => {
    let version = "v1";
    origin.route("/rev.css", (req, res) => {
      if (req.headers["if-none-match"] === `"${version}"`) return res.writeHead(304, { etag: `"${version}"` }).end();
      res.writeHead(200, { "cache-control": "no-cache", etag: `"${version}"` }).end(`content ${version}`);
    });
    assert.equal(status(await get("/rev.css")), "MISS");
    const revalidated = await get("/rev.css");
    assert.equal(status(revalidated), "REVALIDATED");
    assert.equal(revalidated.text, "content v1");
    assert.equal(origin.hits.at(-1)!.headers["if-none-match"], '"v1"');
    version = "v2";
    const changed = await get("/rev.css");
    assert.equal(status(changed), "EXPIRED");
    assert.equal(changed.text, "content v2");
  });

  it("answers clients' conditional and Range requests from the cache", async () => {
    origin.route("/data.bin", (_req, res) =>
      res.writeHead(200, { etag: '"d1"', "last-modified": "Mon, 01 Jan 2024 00:00:00 GMT" }).end("0123456789abcdefghij"),
    );
    await get("/data.bin");
    const range = await get("/data.bin", { range: "bytes=5-9" });
    assert.equal(range.status, 206);
    assert.equal(range.text, "56789");
    assert.equal(range.headers["content-range"], "bytes 5-9/20");
    const suffix = await get("/data.bin", { range: "bytes=-3" });
    assert.equal(suffix.text, "hij");
    assert.equal((await get("/data.bin", { range: "bytes=50-" })).status, 416);
    const notModified = await get("/data.bin", { "if-none-match": '"d1"' });
    assert.equal(notModified.status, 304);
    assert.equal(notModified.text, "");
    assert.equal((await get("/data.bin", { "if-modified-since": "Tue, 02 Jan 2024 00:00:00 GMT" })).status, 304);
    assert.equal(origin.count("/data.bin"), 1, "none of these reached the origin");
  });

  it("concurrent misses of one key make one origin request, and every client is streamed the same complete body", async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    origin.route("/big.zip", (_req, res) => {
      res.writeHead(200, { "content-length": String(2 * 1024 * 1024) });
      res.write(Buffer.alloc(1024 * 1024, 97));
      void released.then(() => res.end(Buffer.alloc(1024 * 1024, 98)));
    });
    const first = await request(`http://127.0.0.1:${port}/big.zip`, { headers: { host } });
    assert.equal(first.headers["cf-cache-status"], "MISS");
    // Streamed while it fills: the first megabyte arrives before the origin has sent the rest.
    let firstBytes = 0;
    const reading = (async () => {
      for await (const chunk of first.body) firstBytes += (chunk as Buffer).length;
    })();
    await eventually(async () => firstBytes >= 1024 * 1024, "the first half arrives while the origin still holds the rest", 30_000);
    const others = Array.from({ length: 8 }, () => get("/big.zip"));
    await sleep(200);
    release();
    const answers = await Promise.all(others);
    await reading;
    assert.equal(firstBytes, 2 * 1024 * 1024);
    for (const a of answers) {
      assert.equal(a.text.length, 2 * 1024 * 1024);
      assert.equal(a.text.slice(-1), "b");
    }
    assert.equal(origin.count("/big.zip"), 1, "one origin request for all of them");
    assert.equal(status(await get("/big.zip")), "HIT");
  });

  it("stale-while-revalidate answers UPDATING then the new copy; stale-if-error answers STALE when the origin fails", async () => {
    let n = 0;
    origin.route("/swr.js", (_req, res) => res.writeHead(200, { "cache-control": "max-age=1, stale-while-revalidate=60" }).end(`swr ${++n}`));
    await get("/swr.js");
    await sleep(1100);
    const stale = await get("/swr.js");
    assert.equal(status(stale), "UPDATING");
    assert.equal(stale.text, "swr 1");
    await eventually(async () => (await get("/swr.js")).text === "swr 2", "the background revalidation stored the new copy", 30_000);

    let failing = false;
    origin.route("/sie.js", (_req, res) =>
      failing ? res.writeHead(503).end("down") : res.writeHead(200, { "cache-control": "max-age=1, stale-if-error=60" }).end("sie ok"),
    );
    await get("/sie.js");
    failing = true;
    await sleep(1100);
    const fallback = await get("/sie.js");
    assert.equal(status(fallback), "STALE");
    assert.equal(fallback.text, "sie ok");
  });

  it("keeps one variant per Accept-Encoding class and asks the origin with exactly it", async () => {
    origin.route("/enc.js", (req, res) => {
      const gzip = req.headers["accept-encoding"] === "gzip";
      res.writeHead(200, { vary: "Accept-Encoding", ...(gzip ? { "content-encoding": "gzip" } : {}) }).end(gzip ? "gzipped" : "plain");
    });
    assert.equal((await get("/enc.js", { "accept-encoding": "gzip, deflate" })).text, "gzipped");
    assert.equal((await get("/enc.js", { "accept-encoding": "identity" })).text, "plain");
    const hit = await get("/enc.js", { "accept-encoding": "gzip" });
    assert.equal(status(hit), "HIT");
    assert.equal(hit.text, "gzipped");
    assert.equal(origin.count("/enc.js"), 2);
  });

  it("headers outside the key never make one client's answer another's (X-Forwarded-Host, X-Original-URL, a Host with a port)", async () => {
    origin.route("/poison.js", (req, res) =>
      res.end(`host=${req.headers["x-forwarded-host"] ?? "-"} original=${req.headers["x-original-url"] ?? "-"} h=${req.headers.host}`),
    );
    const evil = await get("/poison.js", { "x-forwarded-host": "evil.example", "x-original-url": "/admin" });
    assert.equal(evil.text, "host=- original=- h=www.cache-test.example", "a fill never carries them to the origin");
    const victim = await get("/poison.js", {}, `${host}:8080`);
    assert.equal(status(victim), "HIT");
    assert.equal(victim.text, "host=- original=- h=www.cache-test.example");
  });

  it("obeys the zone's development_mode, cache_level and browser_cache_ttl", async () => {
    origin.route("/q.js", (req, res) => res.end(`q ${req.url}`));
    assert.equal((await get("/q.js?a=1")).text, "q /q.js?a=1");
    assert.equal(status(await get("/q.js?a=1")), "HIT");
    assert.equal(status(await get("/q.js?a=2")), "MISS", "aggressive: the query is in the key");
    assert.equal((await p.api("PATCH", `/zones/${zone}/settings/cache_level`, { value: "simplified" })).status, 200);
    const ignored = await get("/q.js?a=3");
    assert.equal(status(ignored), "MISS");
    assert.equal(status(await get("/q.js?b=9")), "HIT", "simplified: the query is ignored");
    assert.equal((await p.api("PATCH", `/zones/${zone}/settings/cache_level`, { value: "basic" })).status, 200);
    assert.equal(status(await get("/q.js?a=1")), "BYPASS", "basic: a query string goes to the origin");
    assert.equal((await p.api("PATCH", `/zones/${zone}/settings/cache_level`, { value: "aggressive" })).status, 200);

    assert.equal((await p.api("PATCH", `/zones/${zone}/settings/browser_cache_ttl`, { value: 86400 })).status, 200);
    assert.equal((await get("/app.js")).headers["cache-control"], "max-age=86400");
    assert.equal((await p.api("PATCH", `/zones/${zone}/settings/browser_cache_ttl`, { value: 0 })).status, 200);
    assert.equal((await get("/app.js")).headers["cache-control"], undefined, "0: the origin's headers as they are");

    assert.equal((await p.api("PATCH", `/zones/${zone}/settings/development_mode`, { value: "on" })).status, 200);
    const before = origin.count("/app.js");
    assert.equal(status(await get("/app.js")), "BYPASS");
    assert.equal(origin.count("/app.js"), before + 1);
    assert.equal((await p.api("PATCH", `/zones/${zone}/settings/development_mode`, { value: "off" })).status, 200);
    assert.equal(status(await get("/app.js")), "HIT");
  });

  it("purges by file, tag, host, prefix and everything; only the caller's zones", async () => {
    for (const path of ["/p/one.css", "/p/two.css", "/other/three.css"])
      origin.route(path, (_req, res) => res.writeHead(200, { "cache-tag": path === "/p/two.css" ? "TWO" : "rest" }).end(path));
    const warm = async () => {
      for (const path of ["/p/one.css", "/p/two.css", "/other/three.css"]) await get(path);
      await get("/img.png", {}, "img.cache-test.example");
    };
    const cached = async (path: string, h = host) => status(await get(path, {}, h)) === "HIT";
    await warm();
    const purge = (body: unknown, headers?: Record<string, string>) => p.api("POST", `/zones/${zone}/purge_cache`, body, headers);

    let r = await purge({ files: [`http://${host}/p/one.css`] });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(r.body.result, { id: zone });
    assert.equal(await cached("/p/one.css"), false);
    assert.equal(await cached("/p/two.css"), true);

    r = await purge({ tags: ["two"] });
    assert.equal(r.status, 200);
    assert.equal(await cached("/p/two.css"), false, "tags are case-insensitive");
    assert.equal(await cached("/other/three.css"), true);

    r = await purge({ prefixes: [`${host}/p/`] });
    assert.equal(await cached("/p/one.css"), false);
    assert.equal(await cached("/p/two.css"), false);
    assert.equal(await cached("/other/three.css"), true);

    r = await purge({ hosts: ["img.cache-test.example"] });
    assert.equal(await cached("/img.png", "img.cache-test.example"), false);
    assert.equal(await cached("/other/three.css"), true);

    r = await purge({ files: [{ url: `http://${host}/other/three.css`, headers: { "Accept-Encoding": "identity" } }] });
    assert.equal(r.status, 200);
    assert.equal(await cached("/other/three.css"), false);

    await warm();
    r = await purge({ purge_everything: true });
    assert.equal(r.status, 200);
    for (const path of ["/p/one.css", "/p/two.css", "/other/three.css"]) assert.equal(await cached(path), false, path);
  });

  it("refuses bad purges with the hosted codes and never reaches another account's zone", async () => {
    const purge = (body: unknown, z = zone, headers?: Record<string, string>) => p.api("POST", `/zones/${z}/purge_cache`, body, headers);
    const expect = async (body: unknown, code: number) => {
      const r = await purge(body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(r.body.success, false);
      assert.equal(r.body.errors[0].code, code, JSON.stringify(r.body));
    };
    await expect({}, 1012);
    await expect({ files: [`http://${host}/a`], tags: ["x"] }, 1012);
    await expect({ purge_everything: false }, 1013);
    await expect({ files: "http://x" }, 1014);
    await expect({ tags: [1] }, 1014);
    await expect({ tags: Array.from({ length: 101 }, (_, i) => `t${i}`) }, 1015);
    await expect({ files: ["http://elsewhere.example/a.js"] }, 10001);
    await expect({ hosts: ["www.cache-b.example"] }, 10001);
    await expect([1, 2], 1012);
    assert.equal((await p.api("POST", `/zones/${zone}/purge_cache`, "not json{", { "content-type": "application/json" })).status, 400);

    // Account B: its own zone yes; account A's zone is answered as missing; a token without Cache Purge is refused.
    const purger = await token(["cache_purge"], accountB);
    const reader = await token(["dns_read"], accountB);
    assert.equal((await purge({ purge_everything: true }, zoneB, { authorization: `Bearer ${purger}` })).status, 200);
    assert.equal((await purge({ purge_everything: true }, zone, { authorization: `Bearer ${purger}` })).status, 404);
    assert.equal((await purge({ purge_everything: true }, zoneB, { authorization: `Bearer ${reader}` })).status, 403);
    assert.equal((await purge({ purge_everything: true }, "0".repeat(32))).status, 404);
  });

  it("the cloudflare SDK's cache.purge and `edgecli cache purge` work unchanged", async () => {
    origin.route("/sdk.js", (_req, res) => res.writeHead(200, { "cache-tag": "sdk" }).end("sdk"));
    await get("/sdk.js");
    assert.equal(status(await get("/sdk.js")), "HIT");
    const cf = new Cloudflare({ apiToken: p.token, baseURL: p.apiUrl, maxRetries: 0 });
    const answer = await cf.cache.purge({ zone_id: zone, tags: ["sdk"] });
    assert.equal(answer?.id, zone);
    assert.equal(status(await get("/sdk.js")), "MISS");

    const cli = await p.cli(["cache", "purge", "cache-test.example", "--file", `http://${host}/sdk.js`]);
    assert.equal(cli.code, 0, cli.stderr);
    assert.match(cli.stdout + cli.stderr, /Purged/);
    assert.equal(status(await get("/sdk.js")), "MISS");
    const bad = await p.cli(["cache", "purge", "cache-test.example"]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /--file, --tag, --host, --prefix or --everything/);
    const help = await p.cli(["cache", "purge", "--help"]);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /--everything/);
  });
});
