import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { createServer, request as httpRequest, type Server } from "node:http";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { request } from "undici";
import type { TestPlatform } from "../../core/testing/platform.js";
import { createAccount, hit, startPlatform, uploadScript } from "../../workers/testing/helpers.js";
import { loopbackBlock } from "../testing/origins.js";

/**
 * The Workers Cache API (caches.default, caches.open) and a Worker's fetch to its zone's origin through the cache
 * (issue 34 item 4), with real workerd, a real origin on loopback and two accounts: what a Worker puts is matched,
 * deleted and purged in its own zone only; Cache-Control of the stored response is obeyed; what hosted refuses is
 * refused; on a workers.dev-style hostname the Cache API does nothing; cf cache options steer the origin fetch.
 */
describe("the Workers Cache API and a Worker's fetch through the cache", () => {
  const addr = loopbackBlock();
  let p: TestPlatform;
  let port: number;
  let zoneA: string;
  let zoneB: string;
  let accountB: string;
  let origin: Server;
  /** Requests the origin saw, by path (with query). */
  const seen = new Map<string, number>();
  /** Requests that reached the origin with the platform's internal cf header (never). */
  let cfHeaderSeen = 0;

  // One Worker for both accounts: ?op=put|match|delete on `key` (in cache `ns` when given), or ?op=fetch of `path` on
  // the zone's origin with `cf`.
  const worker = `export default {
    async fetch(request) {
      const q = new URL(request.url).searchParams;
      const op = q.get("op");
      const cache = q.get("ns") ? await caches.open(q.get("ns")) : caches.default;
      const key = q.get("key") === "self" ? request.url : q.get("key");
      try {
        if (op === "put") {
          const headers = JSON.parse(q.get("headers") ?? "{}");
          const req = new Request(key, { method: q.get("method") ?? "GET" });
          await cache.put(req, new Response(q.get("body") ?? "stored", { status: Number(q.get("status") ?? 200), headers }));
          return new Response("put");
        }
        if (op === "match") {
          const init = q.get("range") ? { headers: { range: q.get("range") } } : {};
          const m = await cache.match(new Request(key, { method: q.get("method") ?? "GET", ...init }));
          if (!m) return new Response("undefined", { headers: { "x-matched": "no" } });
          const out = new Response(m.body, m);
          out.headers.set("x-matched", "yes");
          out.headers.set("x-status", String(m.status));
          return out;
        }
        if (op === "delete") return new Response(String(await cache.delete(key)));
        if (op === "fetch") {
          const cf = q.get("cf") ? JSON.parse(q.get("cf")) : undefined;
          const r = await fetch("http://" + q.get("host") + q.get("path"), cf ? { cf } : {});
          const out = new Response(r.body, r);
          out.headers.set("x-origin-status", String(r.status));
          return out;
        }
      } catch (e) {
        return new Response(e.name + ": " + e.message, { status: 599 });
      }
      return new Response("no op", { status: 404 });
    },
  };`;

  before(async () => {
    // The origin of both zones: answers its path, counting; headers from ?h= (JSON).
    origin = createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://x");
      if (req.headers["x-edge-cf"] !== undefined) cfHeaderSeen++;
      const n = (seen.get(req.url ?? "") ?? 0) + 1;
      seen.set(req.url ?? "", n);
      const headers = JSON.parse(url.searchParams.get("h") ?? "{}") as Record<string, string>;
      res.writeHead(Number(url.searchParams.get("status") ?? 200), { "content-type": "text/plain", ...headers });
      res.end(`origin ${req.headers.host} ${req.url} #${n}`);
    });
    await new Promise<void>((resolve) => origin.listen(80, addr(1), () => resolve()));
    p = await startPlatform([
      "--origin-allow",
      "127.0.0.0/8",
      "--origin-timeout",
      "5",
      "--origin-connect-timeout",
      "2",
      "--cache-max-object-bytes",
      String(1024 * 1024),
    ]);
    port = Number(new URL(p.url).port);
    zoneA = (await p.api("POST", "/zones", { name: "capi-a.example", account: { id: p.accountId } })).body.result.id;
    assert.equal((await p.api("POST", `/zones/${zoneA}/dns_records`, { type: "A", name: "www", content: addr(1), proxied: true })).status, 200);
    assert.equal((await uploadScript(p, "capi-a", worker)).status, 200);
    assert.equal((await p.api("POST", `/zones/${zoneA}/workers/routes`, { pattern: "www.capi-a.example/*", script: "capi-a" })).status, 200);
    accountB = await createAccount(p, "capi-b");
    zoneB = (await p.api("POST", "/zones", { name: "capi-b.example", account: { id: accountB } }, p.keyHeaders())).body.result.id;
    const rec = await p.api("POST", `/zones/${zoneB}/dns_records`, { type: "A", name: "www", content: addr(1), proxied: true }, p.keyHeaders());
    assert.equal(rec.status, 200);
    assert.equal((await uploadScript(p, "capi-b", worker, {}, { accountId: accountB, headers: p.keyHeaders() })).status, 200);
    const route = await p.api("POST", `/zones/${zoneB}/workers/routes`, { pattern: "www.capi-b.example/*", script: "capi-b" }, p.keyHeaders());
    assert.equal(route.status, 200, JSON.stringify(route.body));
  });
  after(async () => {
    await p?.dispose();
    origin?.closeAllConnections();
    await new Promise<void>((resolve) => (origin ? origin.close(() => resolve()) : resolve()));
  });

  /** Calls the Worker on `host` with the query `q`. */
  const call = async (host: string, q: Record<string, string | number | object>) => {
    const qs = new URLSearchParams(Object.entries(q).map(([k, v]): [string, string] => [k, typeof v === "object" ? JSON.stringify(v) : String(v)]));
    const res = await request(`http://127.0.0.1:${port}/?${qs}`, { headers: { host } });
    return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
  };
  const A = "www.capi-a.example";
  const B = "www.capi-b.example";
  const put = (host: string, key: string, more: Record<string, string | number | object> = {}) => call(host, { op: "put", key, ...more });
  const match = (host: string, key: string, more: Record<string, string | number | object> = {}) => call(host, { op: "match", key, ...more });
  const purge = async (zone: string, body: object, headers?: Record<string, string>) => {
    const r = await p.api("POST", `/zones/${zone}/purge_cache`, body, headers);
    assert.equal(r.status, 200, JSON.stringify(r.body));
  };

  it("put, match (with its headers and HIT), delete, as hosted", async () => {
    const key = `https://${A}/basic`;
    assert.equal((await put(A, key, { body: "hello", headers: { "cache-control": "max-age=600", etag: '"v1"', "x-mine": "1" } })).text, "put");
    const m = await match(A, key);
    assert.equal(m.headers["x-matched"], "yes", m.text);
    assert.equal(m.text, "hello");
    assert.equal(m.headers["x-mine"], "1");
    assert.equal(m.headers["cf-cache-status"], "HIT");
    const ranged = await match(A, key, { range: "bytes=1-3" });
    assert.equal(ranged.headers["x-status"], "206");
    assert.equal(ranged.text, "ell");
    assert.equal((await call(A, { op: "delete", key })).text, "true");
    assert.equal((await match(A, key)).headers["x-matched"], "no");
    assert.equal((await call(A, { op: "delete", key })).text, "false", "nothing left to delete");
  });

  it("caches.open(name) is a cache of its own, beside caches.default", async () => {
    const key = `https://${A}/named`;
    await put(A, key, { ns: "mine", body: "in mine", headers: { "cache-control": "max-age=600" } });
    assert.equal((await match(A, key)).headers["x-matched"], "no", "not in caches.default");
    assert.equal((await match(A, key, { ns: "other" })).headers["x-matched"], "no");
    assert.equal((await match(A, key, { ns: "mine" })).text, "in mine");
  });

  it("the stored response's Cache-Control decides: no-store, private, Set-Cookie, s-maxage=0 are not stored; private=Set-Cookie is, without the cookie", async () => {
    const cases: [string, Record<string, string>, boolean][] = [
      ["no-store", { "cache-control": "no-store" }, false],
      ["private", { "cache-control": "private, max-age=600" }, false],
      ["cookie", { "cache-control": "max-age=600", "set-cookie": "a=1" }, false],
      ["s-maxage-wins", { "cache-control": "max-age=600, s-maxage=0" }, false],
      ["expired", { expires: "Thu, 01 Jan 1970 00:00:00 GMT" }, false],
      ["no-headers-200", {}, true],
      ["expires-later", { expires: new Date(Date.now() + 3_600_000).toUTCString() }, true],
      ["private-cookie", { "cache-control": 'max-age=600, private="Set-Cookie"', "set-cookie": "a=1" }, true],
    ];
    for (const [name, headers, stored] of cases) {
      const key = `https://${A}/cc/${name}`;
      assert.equal((await put(A, key, { headers })).text, "put", name);
      const m = await match(A, key);
      assert.equal(m.headers["x-matched"], stored ? "yes" : "no", name);
      if (name === "private-cookie") assert.equal(m.headers["set-cookie"], undefined, "the cookie is not stored");
    }
  });

  it("a TTL from max-age ends: the object is no longer matched", async () => {
    const key = `https://${A}/short`;
    await put(A, key, { headers: { "cache-control": "max-age=1" } });
    assert.equal((await match(A, key)).headers["x-matched"], "yes");
    const deadline = Date.now() + 30_000;
    while ((await match(A, key)).headers["x-matched"] === "yes") {
      assert.ok(Date.now() < deadline, "still matched 30 s after a max-age of 1");
      await new Promise((r) => setTimeout(r, 250));
    }
  });

  it("what hosted refuses is refused: put of a non-GET request, a 206, Vary: *; match of a non-GET finds nothing", async () => {
    const key = `https://${A}/refused`;
    const post = await put(A, key, { method: "POST", headers: { "cache-control": "max-age=600" } });
    assert.equal(post.status, 599);
    assert.match(post.text, /TypeError: .*non-GET/);
    const partial = await put(A, key, { status: 206, headers: { "cache-control": "max-age=600" } });
    assert.match(partial.text, /TypeError: .*206/);
    const vary = await put(A, key, { headers: { "cache-control": "max-age=600", vary: "*" } });
    assert.match(vary.text, /TypeError: .*Vary/);
    await put(A, key, { headers: { "cache-control": "max-age=600" } });
    assert.equal((await match(A, key, { method: "POST" })).headers["x-matched"], "no");
    assert.equal((await match(A, key)).headers["x-matched"], "yes");
  });

  it("the zone's purges reach Cache API objects: by Cache-Tag, by URL, everything", async () => {
    const tagged = `https://${A}/purge/tagged`;
    const byUrl = `https://${A}/purge/url`;
    const other = `https://${A}/purge/other`;
    await put(A, tagged, { headers: { "cache-control": "max-age=600", "cache-tag": "Shelf,blue" } });
    await put(A, byUrl, { headers: { "cache-control": "max-age=600" } });
    await put(A, other, { headers: { "cache-control": "max-age=600" } });
    await purge(zoneA, { tags: ["shelf"] });
    assert.equal((await match(A, tagged)).headers["x-matched"], "no", "purged by its tag");
    assert.equal((await match(A, byUrl)).headers["x-matched"], "yes");
    await purge(zoneA, { files: [byUrl] });
    assert.equal((await match(A, byUrl)).headers["x-matched"], "no", "purged by its URL");
    assert.equal((await match(A, other)).headers["x-matched"], "yes");
    await purge(zoneA, { purge_everything: true });
    assert.equal((await match(A, other)).headers["x-matched"], "no", "purged with everything");
  });

  it("a Cache API key spelled with the host's trailing dot or another port is reached by the zone's purges by URL and by host", async () => {
    // What a Worker that caches request.url puts when a client sends `Host: www.capi-a.example.` or `…:8080`.
    const dotted = `http://${A}./spelled/dot.js`;
    const ported = `http://${A}:8080/spelled/port.js`;
    const warm = async () => {
      for (const key of [dotted, ported]) {
        await put(A, key, { headers: { "cache-control": "max-age=600" } });
        assert.equal((await match(A, key)).headers["x-matched"], "yes", key);
      }
    };
    await warm();
    assert.equal((await match(A, `http://${A}/spelled/dot.js`)).headers["x-matched"], "yes", "the dot names the same host");
    await purge(zoneA, { files: [`http://${A}/spelled/dot.js`, ported] });
    for (const key of [dotted, ported]) assert.equal((await match(A, key)).headers["x-matched"], "no", `${key} purged by its URL`);
    await warm();
    await purge(zoneA, { hosts: [A] });
    for (const key of [dotted, ported]) assert.equal((await match(A, key)).headers["x-matched"], "no", `${key} purged by its host`);
    // B's purge of its own host never reaches A's (a host under another zone is refused before anything is done).
    await warm();
    const r = await p.api("POST", `/zones/${zoneB}/purge_cache`, { hosts: [A] }, p.keyHeaders());
    assert.equal(r.status, 400);
    for (const key of [dotted, ported]) assert.equal((await match(A, key)).headers["x-matched"], "yes", key);
  });

  it("tenants: one account's Worker never reads, writes or deletes another's cache; each purge stays in its zone", async () => {
    const keyA = `https://${A}/tenant`;
    await put(A, keyA, { body: "A's", headers: { "cache-control": "max-age=600" } });
    // B's Worker names A's URL: it has no cache there (its own zones only).
    assert.equal((await match(B, keyA)).headers["x-matched"], "no");
    await put(B, keyA, { body: "B's forgery", headers: { "cache-control": "max-age=600" } });
    assert.equal((await call(B, { op: "delete", key: keyA })).text, "false");
    assert.equal((await match(A, keyA)).text, "A's", "A's object is untouched");
    // B's own object under the same path on its own name.
    const keyB = `https://${B}/tenant`;
    await put(B, keyB, { body: "B's", headers: { "cache-control": "max-age=600", "cache-tag": "same" } });
    await put(A, `https://${A}/tagged-same`, { headers: { "cache-control": "max-age=600", "cache-tag": "same" } });
    assert.equal((await match(A, keyB)).headers["x-matched"], "no", "A cannot read B's");
    await purge(zoneA, { tags: ["same"] });
    assert.equal((await match(B, keyB)).text, "B's", "A's tag purge left B's object");
    await purge(zoneB, { purge_everything: true }, p.keyHeaders());
    assert.equal((await match(A, keyA)).text, "A's", "B's purge left A's object");
  });

  it("a Worker on a Custom Domain has its zone's cache, the same one its route's Worker of that zone sees", async () => {
    assert.equal((await uploadScript(p, "capi-domain", worker)).status, 200);
    const attached = await p.api("PUT", `/accounts/${p.accountId}/workers/domains`, { hostname: "shop.capi-a.example", service: "capi-domain" });
    assert.equal(attached.status, 200, JSON.stringify(attached.body));
    const shop = "shop.capi-a.example";
    const key = `https://${shop}/item`;
    const deadline = Date.now() + 30_000;
    // The domain is served once the route table is read again.
    while ((await put(shop, key, { body: "from the domain", headers: { "cache-control": "max-age=600" } })).text !== "put") {
      assert.ok(Date.now() < deadline, "the Custom Domain never answered");
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.equal((await match(shop, key)).text, "from the domain");
    // capi-a is routed in the same zone: one zone, one cache (hosted: per zone).
    assert.equal((await match(A, key)).text, "from the domain");
    assert.equal((await match(B, key)).headers["x-matched"], "no", "never another tenant's");
  });

  it("on a workers.dev-style hostname the Cache API does nothing (match undefined, put stores nothing)", async () => {
    const dev = await hit(p, "capi-a", `/?op=put&key=self&headers=${encodeURIComponent('{"cache-control":"max-age=600"}')}`);
    assert.equal(dev.text, "put", "put resolves");
    const m = await hit(p, "capi-a", "/?op=match&key=self");
    assert.equal(m.text, "undefined");
    // A Worker with no route nor Custom Domain: nowhere to cache, whatever key it names.
    assert.equal((await uploadScript(p, "capi-dev", worker)).status, 200);
    await hit(p, "capi-dev", `/?op=put&key=${encodeURIComponent(`https://${A}/dev`)}&headers=${encodeURIComponent('{"cache-control":"max-age=600"}')}`);
    assert.equal((await hit(p, "capi-dev", `/?op=match&key=${encodeURIComponent(`https://${A}/dev`)}`)).text, "undefined");
    assert.equal((await match(A, `https://${A}/dev`)).headers["x-matched"], "no");
  });

  it("a Worker's fetch to its zone's origin goes through the cache: default eligibility, cacheEverything, cacheTtl", async () => {
    const fetchVia = (path: string, cf?: object) => call(A, { op: "fetch", host: A, path, ...(cf ? { cf } : {}) });
    // A static extension with a lifetime: cached by default (the second is a HIT, the origin saw one request).
    const css = `/style.css?h=${encodeURIComponent('{"cache-control":"max-age=600"}')}`;
    assert.equal((await fetchVia(css)).headers["cf-cache-status"], "MISS");
    const again = await fetchVia(css);
    assert.equal(again.headers["cf-cache-status"], "HIT");
    assert.match(again.text, /#1$/);
    assert.equal(seen.get(css), 1);
    // HTML is not cached by default; with cacheEverything it is.
    const page = `/page?h=${encodeURIComponent('{"cache-control":"max-age=600"}')}`;
    await fetchVia(page);
    assert.equal((await fetchVia(page)).headers["cf-cache-status"], "DYNAMIC");
    assert.equal(seen.get(page), 2);
    const everything = `/page2?h=${encodeURIComponent('{"cache-control":"max-age=600"}')}`;
    await fetchVia(everything, { cacheEverything: true });
    assert.equal((await fetchVia(everything, { cacheEverything: true })).headers["cf-cache-status"], "HIT");
    assert.equal(seen.get(everything), 1);
    // cacheTtl: cached whatever the origin's lifetime says (here none at all, and max-age=0).
    for (const path of ["/ttl", `/ttl0?h=${encodeURIComponent('{"cache-control":"max-age=0"}')}`]) {
      await fetchVia(path, { cacheTtl: 300 });
      const r = await fetchVia(path, { cacheTtl: 300 });
      assert.equal(r.headers["cf-cache-status"], "HIT", path);
      assert.equal(seen.get(path), 1, path);
    }
    // A negative cacheTtl: not cached.
    await fetchVia("/never", { cacheTtl: -1 });
    await fetchVia("/never", { cacheTtl: -1 });
    assert.equal(seen.get("/never"), 2);
  });

  it("cacheTtlByStatus, cacheKey and cacheTags are obeyed", async () => {
    const fetchVia = (path: string, cf?: object) => call(A, { op: "fetch", host: A, path, ...(cf ? { cf } : {}) });
    const byStatus = { "200-299": 300, "404": -1 };
    await fetchVia("/s200", { cacheTtlByStatus: byStatus });
    assert.equal((await fetchVia("/s200", { cacheTtlByStatus: byStatus })).headers["cf-cache-status"], "HIT");
    await fetchVia("/s404?status=404", { cacheTtlByStatus: byStatus });
    await fetchVia("/s404?status=404", { cacheTtlByStatus: byStatus });
    assert.equal(seen.get("/s404?status=404"), 2, "a negative TTL for 404: not cached");
    // Two URLs with one cacheKey are one object.
    await fetchVia("/k1", { cacheTtl: 300, cacheKey: "my-key" });
    const second = await fetchVia("/k2", { cacheTtl: 300, cacheKey: "my-key" });
    assert.equal(second.headers["cf-cache-status"], "HIT");
    assert.match(second.text, /\/k1 #1$/);
    assert.equal(seen.get("/k2"), undefined);
    // cacheTags: purged by the tag.
    await fetchVia("/tagged", { cacheTtl: 300, cacheTags: ["Worker-Tag"] });
    assert.equal((await fetchVia("/tagged", { cacheTtl: 300 })).headers["cf-cache-status"], "HIT");
    await purge(zoneA, { tags: ["worker-tag"] });
    assert.equal((await fetchVia("/tagged", { cacheTtl: 300 })).headers["cf-cache-status"], "MISS");
    assert.equal(cfHeaderSeen, 0, "the cf blob's header never reaches the origin");
  });

  it("bad cf cache options are refused with a 400 naming them, and the origin is not asked", async () => {
    for (const cf of [{ cacheTtl: "soon" }, { cacheTtlByStatus: { abc: 1 } }, { cacheTtlByStatus: { "200": 1.5 } }, { cacheTags: [1] }, { cacheKey: "" }]) {
      const r = await call(A, { op: "fetch", host: A, path: "/bad-cf", cf });
      assert.equal(r.status, 400, `${JSON.stringify(cf)}: ${r.text}`);
      assert.match(r.text, /cf\.cache/);
    }
    assert.equal(seen.get("/bad-cf"), undefined);
  });

  it("a put larger than --cache-max-object-bytes is not stored; one under it is", async () => {
    // The Worker builds the body itself, of ?n= bytes, puts and matches it.
    const code = `export default { async fetch(request) {
      const n = new URL(request.url).searchParams.get("n");
      const key = "https://${A}/size/" + n;
      await caches.default.put(key, new Response("x".repeat(Number(n)), { headers: { "cache-control": "max-age=600" } }));
      const m = await caches.default.match(key);
      return new Response(m ? "stored " + (await m.text()).length : "not stored");
    } };`;
    assert.equal((await uploadScript(p, "capi-size", code)).status, 200);
    assert.equal((await p.api("POST", `/zones/${zoneA}/workers/routes`, { pattern: "www.capi-a.example/size*", script: "capi-size" })).status, 200);
    const sized = async (n: number) => (await request(`http://127.0.0.1:${port}/size?n=${n}`, { headers: { host: A } })).body.text();
    assert.equal(await sized(1024 * 1024 + 1), "not stored");
    assert.equal(await sized(512 * 1024), `stored ${512 * 1024}`);
  });

  it("the platform's Cache API endpoint refuses what workerd never sends (checked with the Worker's own label): other methods, keys, names, payloads", async () => {
    // The label workerd sends for capi-a's cache calls, read from its config (0600, this user's).
    const dir = join(p.stateDir, "workers-run", "capi-a");
    const version = readdirSync(dir).find((d) => /^\d+$/.test(d))!;
    const config = readFileSync(join(dir, version, "config.capnp"), "utf8");
    const m =
      /\(name = "cache", external = \(address = "unix:([^"]+)", http = \(style = proxy, injectRequestHeaders = \[\(name = "([^"]+)", value = "([^"]+)"\)/.exec(
        config,
      );
    assert.ok(m, "the cache service is in the config");
    const [, socketPath, headerName, label] = m;
    const send = (method: string, target: string, headers: Record<string, string> = {}, body?: Buffer | string, cut = false) =>
      new Promise<{ status: number; headers: Record<string, unknown> }>((resolve, reject) => {
        const req = httpRequest({ socketPath, method, path: target, headers: { [headerName]: label, ...headers } }, (res) => {
          res.resume();
          res.once("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
        });
        req.once("error", reject);
        if (cut && body !== undefined) {
          req.write(body);
          setTimeout(() => req.destroy(), 200);
          return;
        }
        req.end(body);
      });
    const key = `https://${A}/internal`;
    assert.equal((await send("DELETE", key)).status, 405);
    assert.equal((await send("GET", "/not-absolute")).status, 400);
    assert.equal((await send("GET", key, { "cf-cache-namespace": "%E0%A4%A" })).status, 400, "a name that is not URI-encoded");
    assert.equal((await send("GET", key, { "cf-cache-namespace": "n".repeat(4000) })).status, 400, "a name too long");
    assert.equal((await send("PUT", key, {}, "not an HTTP response\r\n\r\nbody")).status, 413);
    assert.equal((await send("PUT", key, {}, `HTTP/1.1 200 OK\r\nx-big: ${"a".repeat(70 * 1024)}\r\n\r\nbody`)).status, 413, "a head over 64 KiB");
    const cutHead = `HTTP/1.1 200 OK\r\ncache-control: max-age=600\r\ncontent-length: 1000\r\n\r\n`;
    assert.equal((await send("PUT", key, {}, cutHead + "short")).status, 413, "a body shorter than its length");
    await send("PUT", key, { "transfer-encoding": "chunked" }, cutHead + "x".repeat(100), true).catch(() => undefined);
    const hit = await send("GET", key, { "cache-control": "only-if-cached" });
    assert.equal(hit.status, 504, "nothing of those was stored");
    assert.equal(hit.headers["cf-cache-status"], "MISS");
    // Well formed: stored and matched; another tenant's key with this label: nothing.
    assert.equal((await send("PUT", key, {}, `HTTP/1.1 200 OK\r\ncache-control: max-age=600\r\ncontent-length: 2\r\n\r\nok`)).status, 204);
    assert.equal((await send("GET", key)).headers["cf-cache-status"], "HIT");
    assert.equal((await send("PUT", `https://${B}/internal`, {}, `HTTP/1.1 200 OK\r\ncache-control: max-age=600\r\ncontent-length: 2\r\n\r\nok`)).status, 413);
    assert.equal((await send("GET", `https://${B}/internal`)).status, 504);
    // Without the label (or with another secret): refused before any of this.
    assert.equal((await send("GET", key, { [headerName]: "forged.e30" })).status, 403);
  });
});
