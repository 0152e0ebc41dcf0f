import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { request } from "undici";
import WebSocket, { WebSocketServer } from "ws";
import { createServer } from "node:http";
import { connect } from "node:net";
import { Readable } from "node:stream";
import { rawRequest } from "../../core/testing/raw-http.js";
import { startTestPlatform, type TestPlatform } from "../../core/testing/platform.js";
import { createAccount } from "../../workers/testing/helpers.js";
import { eventually } from "../../core/testing/eventually.js";
import { loopbackBlock, startOrigin, testCertificates, type SeenRequest } from "../testing/origins.js";

/**
 * The reverse proxy against real origins on loopback addresses (port 80 and 443; the platform allows 127.0.0.0/8 as
 * origins): forwarding by Host through DNS's view of the zone, headers, streaming, SSL modes, the 52x pages, the
 * address policy, WebSockets, loops and the bad-input shapes.
 */
describe("the edge forwards proxied names to their origins", () => {
  const addr = loopbackBlock();
  const certs = testCertificates(["www.tls-test.example", "self.tls-test.example"]);
  let p: TestPlatform;
  let port: number;
  let origin: { seen: SeenRequest[]; closedEarly: () => number };
  let originB: { seen: SeenRequest[] };
  let zone: string;
  let tlsZone: string;
  // Closed when the suite ends (an `after` inside `before` would run as soon as the hook ends).
  const cleanups: (() => unknown)[] = [];
  const hooks = { after: (fn: () => unknown) => void cleanups.push(fn) };

  const record = async (zoneId: string, body: Record<string, unknown>, headers?: Record<string, string>) => {
    const r = await p.api("POST", `/zones/${zoneId}/dns_records`, body, headers);
    assert.equal(r.status, 200, JSON.stringify(r.body));
  };
  const get = async (host: string, path = "/", opts: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {}) => {
    const res = await request(`http://127.0.0.1:${port}${path}`, {
      method: (opts.method ?? "GET") as "GET",
      headers: { host, ...opts.headers },
      body: opts.body,
    });
    return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
  };

  before(async () => {
    origin = await startOrigin(hooks, { address: addr(1), name: "a" });
    await startOrigin(hooks, { address: addr(2), name: "tls-signed", tls: certs.signed });
    await startOrigin(hooks, { address: addr(3), name: "tls-self", tls: certs.selfSigned });
    // Plain HTTP where TLS is expected: the handshake fails.
    await startOrigin(hooks, { address: addr(4), name: "plain-on-443", port: 443 });
    originB = await startOrigin(hooks, { address: addr(7), name: "b" });
    p = await startTestPlatform({
      args: ["--origin-allow", "127.0.0.0/8", "--origin-timeout", "2", "--origin-connect-timeout", "2", "--origin-ca-file", certs.caFile],
    });
    port = Number(new URL(p.url).port);
    zone = (await p.api("POST", "/zones", { name: "proxy-test.example", account: { id: p.accountId } })).body.result.id;
    await record(zone, { type: "A", name: "www", content: addr(1), proxied: true });
    await record(zone, { type: "A", name: "dnsonly", content: addr(1), proxied: false });
    await record(zone, { type: "A", name: "down", content: addr(5), proxied: true });
    await record(zone, { type: "A", name: "private", content: "10.1.2.3", proxied: true });
    await record(zone, { type: "A", name: "*.wild", content: addr(1), proxied: true });
    await record(zone, { type: "A", name: "origin", content: addr(1), proxied: false });
    await record(zone, { type: "CNAME", name: "alias", content: "origin.proxy-test.example", proxied: true });
    await record(zone, { type: "CNAME", name: "ext", content: "nothing.invalid", proxied: true });
    await record(zone, { type: "A", name: "multi", content: addr(5), proxied: true });
    await record(zone, { type: "A", name: "multi", content: addr(1), proxied: true });
    await record(zone, { type: "A", name: "ws", content: addr(6), proxied: true });
    tlsZone = (await p.api("POST", "/zones", { name: "tls-test.example", account: { id: p.accountId } })).body.result.id;
    await record(tlsZone, { type: "A", name: "www", content: addr(2), proxied: true });
    await record(tlsZone, { type: "A", name: "self", content: addr(3), proxied: true });
    await record(tlsZone, { type: "A", name: "plain", content: addr(4), proxied: true });
    await record(tlsZone, { type: "A", name: "refused", content: addr(1), proxied: true });
    // A second tenant with its own origin.
    const accountB = await createAccount(p, "proxy-b");
    const zoneB = (await p.api("POST", "/zones", { name: "proxy-b.example", account: { id: accountB } }, p.keyHeaders())).body.result.id;
    await record(zoneB, { type: "A", name: "www", content: addr(7), proxied: true }, p.keyHeaders());
    // Tenant B aims proxied CNAMEs at tenant A's proxied name (whose origin address DNS hides) and its DNS-only one.
    await record(zoneB, { type: "CNAME", name: "steal", content: "www.proxy-test.example", proxied: true }, p.keyHeaders());
    await record(zoneB, { type: "CNAME", name: "steal-origin", content: "origin.proxy-test.example", proxied: true }, p.keyHeaders());
  });
  after(async () => {
    await p?.dispose();
    for (const fn of cleanups) await fn();
    certs.dispose();
  });

  it("forwards method, path, query, headers and body, with the forwarding headers, and answers cf-ray", async () => {
    const r = await get("WWW.Proxy-Test.Example.:" + port, "/echo?q=1&r=%20", {
      method: "POST",
      body: "hello",
      headers: {
        "x-forwarded-for": "198.51.100.7",
        "x-custom": "kept",
        te: "trailers",
        "cf-connecting-ip": "203.0.113.99",
        "content-type": "text/plain",
      },
    });
    assert.equal(r.status, 200, r.text);
    const seen = JSON.parse(r.text);
    assert.equal(seen.origin, "a");
    assert.equal(seen.method, "POST");
    assert.equal(seen.url, "/echo?q=1&r=%20");
    assert.equal(seen.bodyBytes, 5);
    const h = seen.headers;
    assert.equal(h.host, "www.proxy-test.example");
    assert.equal(h["x-custom"], "kept");
    assert.equal(h.te, undefined);
    assert.equal(h["cf-connecting-ip"], "127.0.0.1", "the client's own claim is replaced");
    assert.equal(h["x-forwarded-for"], "198.51.100.7, 127.0.0.1");
    assert.equal(h["x-forwarded-proto"], "http");
    assert.equal(h["cf-visitor"], '{"scheme":"http"}');
    assert.match(h["cf-ray"], /^[0-9a-f]{16}-EDGE$/);
    assert.equal(r.headers["cf-ray"], h["cf-ray"]);
    assert.equal(h["cdn-loop"], "edge-platform");
    // The origin's hop-by-hop headers do not reach the client.
    assert.equal(r.headers["x-origin-private"], undefined);
    assert.notEqual(r.headers["keep-alive"], "timeout=5", "the origin's keep-alive is its own connection's");
  });

  it("an origin's X-Accel-* headers never reach the client, forwarded or cached (as hosted); its other headers do", async () => {
    const accel = ["x-accel-redirect", "x-accel-buffering", "x-accel-charset", "x-accel-limit-rate"];
    for (const [path, status] of [
      ["/x-accel", "DYNAMIC"],
      ["/x-accel.css", "MISS"],
      ["/x-accel.css", "HIT"],
    ]) {
      const r = await get("www.proxy-test.example", path);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.text, `origin a ${path}`, "the body is the origin's answer, no redirect followed");
      assert.equal(r.headers["cf-cache-status"], status, path);
      assert.equal(r.headers["x-site"], "kept", `${path} ${status}`);
      for (const name of accel) assert.equal(r.headers[name], undefined, `${name} on ${path} ${status}`);
    }
  });

  it("resolves names as DNS answers them: wildcards, CNAME chains inside our zones, several addresses (next one on a refused connect)", async () => {
    assert.equal((await get("deep.a.wild.proxy-test.example")).text, "origin a");
    assert.equal((await get("alias.proxy-test.example")).text, "origin a");
    for (let i = 0; i < 4; i++) assert.equal((await get("multi.proxy-test.example")).text, "origin a");
    assert.equal((await get("www.proxy-b.example")).text, "origin b", "another tenant's name goes to its own origin");
    assert.ok(originB.seen.length >= 1);
  });

  it("never forwards a DNS-only name, a name without records (the plan's 404 page) or a paused zone (1001 page with the ray id)", async () => {
    const before = origin.seen.length;
    // DNS-only and missing names get the hostname plan's page (nothing is served there), never the origin.
    for (const host of ["dnsonly.proxy-test.example", "nothing-here.proxy-test.example"]) {
      const r = await get(host);
      assert.equal(r.status, 404, host);
      assert.match(String(r.headers["content-type"]), /^text\/html/);
      // The page says what is missing (it used to say the platform had no origin to send it to, from before the proxy).
      assert.match(r.text, /it has no proxied DNS record \(a DNS-only record sends visitors straight to its address/, host);
    }
    const paused = (await p.api("POST", "/zones", { name: "paused-test.example", account: { id: p.accountId } })).body.result.id;
    await record(paused, { type: "A", name: "www", content: addr(1), proxied: true });
    assert.equal((await get("www.paused-test.example")).text, "origin a");
    assert.equal((await p.api("PATCH", `/zones/${paused}`, { paused: true })).status, 200);
    const pausedPage = await get("www.paused-test.example");
    assert.equal(pausedPage.status, 530);
    assert.match(pausedPage.text, /Error 1001/);
    assert.ok(pausedPage.text.includes(String(pausedPage.headers["cf-ray"])), "the page shows the ray id");
    assert.equal(origin.seen.length, before + 1, "only the request before the pause reached the origin");
  });

  it("what the edge keeps per host follows every DNS change at once: a zone made for a name, a record's address, proxied off, the record deleted, a CNAME target's zone changed, the zone deleted", async () => {
    // Each request comes right after the API call answered, for a host asked just before the change: an answer kept
    // per host from before it would be wrong. On loopback a name nobody's is the API's (a JSON envelope); a name of
    // a zone with nothing proxied gets the plan's page (HTML 404); a proxied one its origin.
    const name = "memo-test.example";
    const host = `www.${name}`;
    const path = "/client/v4/user/tokens/verify";
    const api = (r: { headers: Record<string, unknown> }) => /json/.test(String(r.headers["content-type"]));
    assert.ok(api(await get(host, path)), "no zone yet: the API answers");
    const memoZone = (await p.api("POST", "/zones", { name, account: { id: p.accountId } })).body.result.id;
    const noRecord = await get(host, path);
    assert.equal(noRecord.status, 404, "a zone without the record: nothing served here");
    assert.ok(!api(noRecord), "a tenant's name now, never the API");
    const made = await p.api("POST", `/zones/${memoZone}/dns_records`, { type: "A", name: "www", content: addr(1), proxied: true });
    assert.equal(made.status, 200, JSON.stringify(made.body));
    const id = made.body.result.id as string;
    assert.equal((await get(host)).text, "origin a");
    assert.equal((await p.api("PATCH", `/zones/${memoZone}/dns_records/${id}`, { content: addr(7) })).status, 200);
    assert.equal((await get(host)).text, "origin b", "the record's new address");
    assert.equal((await p.api("PATCH", `/zones/${memoZone}/dns_records/${id}`, { proxied: false })).status, 200);
    assert.equal((await get(host)).status, 404, "DNS-only now: never forwarded");
    assert.equal((await p.api("PATCH", `/zones/${memoZone}/dns_records/${id}`, { proxied: true })).status, 200);
    assert.equal((await get(host)).text, "origin b");
    assert.equal((await p.api("DELETE", `/zones/${memoZone}/dns_records/${id}`)).status, 200);
    assert.equal((await get(host)).status, 404, "the record deleted");
    // A proxied CNAME into another zone of the account: a change there changes where this name goes.
    const chainZone = (await p.api("POST", "/zones", { name: "memo-chain.example", account: { id: p.accountId } })).body.result.id;
    const target = await p.api("POST", `/zones/${chainZone}/dns_records`, { type: "A", name: "target", content: addr(1), proxied: false });
    assert.equal(target.status, 200, JSON.stringify(target.body));
    await record(memoZone, { type: "CNAME", name: "www", content: "target.memo-chain.example", proxied: true });
    assert.equal((await get(host)).text, "origin a");
    assert.equal((await p.api("PATCH", `/zones/${chainZone}/dns_records/${target.body.result.id}`, { content: addr(7) })).status, 200);
    assert.equal((await get(host)).text, "origin b", "the CNAME target's new address (a change in another zone)");
    assert.equal((await p.api("DELETE", `/zones/${memoZone}`)).status, 200);
    const gone = await get(host, path);
    assert.ok(api(gone), "the zone deleted: a name nobody's again (the API's on loopback)");
    assert.doesNotMatch(gone.text, /origin/);
    assert.equal((await p.api("DELETE", `/zones/${chainZone}`)).status, 200);
  });

  it("answers the hosted 52x pages: 521 refused, 523 no address, 524 no answer (or a trickled head) in --origin-timeout, 520 hang-up or oversized head", async () => {
    const refused = await get("down.proxy-test.example");
    assert.equal(refused.status, 521);
    assert.match(refused.text, /Error 521/);
    // The status line says what the code means (Node knows no reason for 52x and wrote "unknown"), as the page does.
    const line = await rawRequest(port, "GET / HTTP/1.1\r\nHost: down.proxy-test.example\r\nConnection: close\r\n\r\n");
    assert.match(line.raw, /^HTTP\/1\.1 521 Web server is down\r\n/);
    assert.equal((await get("ext.proxy-test.example")).status, 523);
    const slow = await get("www.proxy-test.example", "/never");
    assert.equal(slow.status, 524);
    // A head trickled a line at a time is the same: the whole head must come within --origin-timeout.
    const [trickled, meanwhile] = await Promise.all([get("www.proxy-test.example", "/trickle"), get("www.proxy-test.example")]);
    assert.equal(trickled.status, 524);
    assert.equal(meanwhile.text, "origin a", "other requests are served meanwhile");
    assert.equal((await get("www.proxy-test.example", "/hangup")).status, 520);
    assert.equal((await get("www.proxy-test.example", "/big-head")).status, 520);
    // Mid-body: the client's answer is cut (undici reports the short body), never a page appended to it.
    await assert.rejects(get("www.proxy-test.example", "/close-mid"));
  });

  it("a proxied CNAME into another account's zone is refused with 1014, never forwarded to that account's origin", async () => {
    const before = origin.seen.length;
    for (const host of ["steal.proxy-b.example", "steal-origin.proxy-b.example"]) {
      const r = await get(host);
      assert.equal(r.status, 403, host);
      assert.match(r.text, /Error 1014/);
      assert.match(r.text, /CNAME Cross-User Banned/);
    }
    const ws = await rawRequest(
      port,
      "GET /ws HTTP/1.1\r\nHost: steal.proxy-b.example\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    );
    assert.equal(ws.status, 403, ws.raw);
    assert.match(ws.body, /Error 1014/);
    assert.equal(origin.seen.length, before, "tenant A's origin saw none of them");
  });

  it("refuses origins outside the address policy with 1000, without connecting", async () => {
    const r = await get("private.proxy-test.example");
    assert.equal(r.status, 403);
    assert.match(r.text, /Error 1000/);
    assert.match(r.text, /DNS points to prohibited IP/);
  });

  it("a request that passed through this edge (CDN-Loop) is stopped", async () => {
    const before = origin.seen.length;
    const r = await get("www.proxy-test.example", "/", { headers: { "cdn-loop": "other-cdn, edge-platform" } });
    assert.equal(r.status, 508);
    assert.equal(origin.seen.length, before);
  });

  it("always_use_https redirects plain HTTP with 301", async () => {
    await p.api("PATCH", `/zones/${zone}/settings/always_use_https`, { value: "on" });
    const r = await get("www.proxy-test.example", "/a/b?c=d");
    assert.equal(r.status, 301);
    assert.equal(r.headers.location, "https://www.proxy-test.example/a/b?c=d");
    await p.api("PATCH", `/zones/${zone}/settings/always_use_https`, { value: "off" });
    assert.equal((await get("www.proxy-test.example")).status, 200);
  });

  it("SSL modes: full speaks TLS to 443 unverified; strict verifies (with --origin-ca-file) and answers 526; a failed handshake is 525", async () => {
    assert.equal((await get("www.tls-test.example")).status, 521, "flexible: plain HTTP to port 80, where nothing listens");
    await p.api("PATCH", `/zones/${tlsZone}/settings/ssl`, { value: "full" });
    assert.equal((await get("www.tls-test.example")).text, "origin tls-signed");
    assert.equal((await get("self.tls-test.example")).text, "origin tls-self");
    assert.equal((await get("plain.tls-test.example")).status, 525);
    assert.equal((await get("refused.tls-test.example")).status, 521);
    await p.api("PATCH", `/zones/${tlsZone}/settings/ssl`, { value: "strict" });
    assert.equal((await get("www.tls-test.example")).text, "origin tls-signed");
    const invalid = await get("self.tls-test.example");
    assert.equal(invalid.status, 526);
    assert.match(invalid.text, /Invalid SSL certificate/);
  });

  it("streams large bodies both ways", async () => {
    const size = 32 * 1024 * 1024;
    const down = await request(`http://127.0.0.1:${port}/bytes/${size}`, { headers: { host: "www.proxy-test.example" } });
    let got = 0;
    for await (const chunk of down.body) got += (chunk as Buffer).length;
    assert.equal(got, size);
    async function* upload() {
      const chunk = Buffer.alloc(1024 * 1024, 97);
      for (let i = 0; i < 32; i++) yield chunk;
    }
    const up = await request(`http://127.0.0.1:${port}/echo`, { method: "POST", headers: { host: "www.proxy-test.example" }, body: Readable.from(upload()) });
    assert.equal(JSON.parse(await up.body.text()).bodyBytes, size);
  });

  it("a client that goes away cancels the origin's request", async () => {
    const before = origin.closedEarly();
    const ac = new AbortController();
    const pending = request(`http://127.0.0.1:${port}/never`, { headers: { host: "www.proxy-test.example" }, signal: ac.signal }).catch(() => undefined);
    await eventually(
      () => origin.seen.some((s) => s.url === "/never" && s.headers["x-marker"] === undefined) && origin.seen.filter((s) => s.url === "/never").length >= 2,
      "the origin got it",
      10_000,
    );
    ac.abort();
    await pending;
    await eventually(() => origin.closedEarly() > before, "the origin's request was closed", 10_000);
  });

  it("bad input: smuggling shapes, absolute targets, many headers: clean 4xx or a forward, never a 500", async () => {
    const head = (lines: string[]) => lines.join("\r\n") + "\r\n\r\n";
    const both = await rawRequest(
      port,
      head(["POST /echo HTTP/1.1", "Host: www.proxy-test.example", "Content-Length: 5", "Transfer-Encoding: chunked", "Connection: close"]) + "0\r\n\r\n",
    );
    assert.equal(both.status, 400, both.raw);
    const twice = await rawRequest(
      port,
      head(["POST /echo HTTP/1.1", "Host: www.proxy-test.example", "Content-Length: 5", "Content-Length: 6", "Connection: close"]) + "hello!",
    );
    assert.equal(twice.status, 400, twice.raw);
    const other = await rawRequest(port, head(["GET http://evil.example/echo HTTP/1.1", "Host: www.proxy-test.example", "Connection: close"]));
    assert.equal(other.status, 400, other.raw);
    const same = await rawRequest(port, head(["GET http://www.proxy-test.example/echo HTTP/1.1", "Host: www.proxy-test.example", "Connection: close"]));
    assert.equal(same.status, 200, same.raw);
    assert.match(same.body, /"url":"\/echo"/);
    // A header the client's Connection header lists is hop-by-hop: the origin does not get it.
    const listed = await rawRequest(
      port,
      head(["GET /echo HTTP/1.1", "Host: www.proxy-test.example", "X-Private: dropped", "X-Kept: yes", "Connection: close, x-private"]),
    );
    assert.equal(listed.status, 200, listed.raw);
    assert.match(listed.body, /"x-kept":"yes"/);
    assert.doesNotMatch(listed.body, /x-private/);
    const many = Array.from({ length: 1000 }, (_, i) => `X-H${i}: v`);
    const crowd = await rawRequest(port, head(["GET /echo HTTP/1.1", "Host: www.proxy-test.example", ...many, "Connection: close"]));
    assert.ok(crowd.status === 200 || crowd.status === 431, crowd.raw.slice(0, 200));
    if (crowd.status === 200) {
      const got = origin.seen.filter((s) => s.headers["x-h0"] === "v").map((s) => Object.keys(s.headers).filter((h) => h.startsWith("x-h")).length);
      assert.deepEqual(got, [1000]);
    }
    // Other requests were served meanwhile and after.
    assert.equal((await get("www.proxy-test.example")).status, 200);
  });

  it("passes WebSockets through while the zone's websockets setting is on", async () => {
    const http = createServer();
    const wss = new WebSocketServer({ server: http });
    wss.on("connection", (ws, req) => ws.on("message", (m) => ws.send(`echo ${m} via ${req.headers["cf-connecting-ip"]}`)));
    await new Promise<void>((resolve) => http.listen(80, addr(6), resolve));
    try {
      const ws = new WebSocket(`ws://127.0.0.1:${port}/socket`, { headers: { host: "ws.proxy-test.example" } });
      await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
      const reply = new Promise<string>((resolve) => ws.once("message", (m) => resolve(String(m))));
      ws.send("hi");
      assert.equal(await reply, "echo hi via 127.0.0.1");
      ws.close();
      await p.api("PATCH", `/zones/${zone}/settings/websockets`, { value: "off" });
      const refused = new WebSocket(`ws://127.0.0.1:${port}/socket`, { headers: { host: "ws.proxy-test.example" } });
      await assert.rejects(new Promise((resolve, reject) => refused.once("open", resolve).once("error", reject)));
      await p.api("PATCH", `/zones/${zone}/settings/websockets`, { value: "on" });
    } finally {
      wss.close();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    }
  });

  it("a WebSocket handshake the origin does not switch (no 101): its answer reaches the client, and nothing the client sends after it reaches the origin", async () => {
    const handshake = (path: string) =>
      `GET ${path} HTTP/1.1\r\nHost: www.proxy-test.example\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`;
    // A request of the attacker's own, past the edge's header rules: another Host, a forged client address.
    const smuggled = "GET /echo HTTP/1.1\r\nHost: other-vhost.example\r\nCF-Connecting-IP: 10.9.9.9\r\n\r\n";
    // In the same packet as the handshake (the upgrade's `head`).
    const same = await rawRequest(port, handshake("/not-a-socket") + smuggled);
    assert.equal(same.status, 200, same.raw.slice(0, 300));
    assert.equal(same.body, "origin a");
    // On the same connection once the origin has answered.
    await new Promise<void>((resolve) => {
      const s = connect(port, "127.0.0.1", () => s.write(handshake("/not-a-socket-either")));
      let got = "";
      let sent = false;
      s.on("data", (d: Buffer) => {
        got += d.toString("latin1");
        if (!sent && got.includes("origin a")) {
          sent = true;
          s.write(smuggled);
        }
      });
      s.on("error", () => undefined);
      s.once("close", () => resolve());
      setTimeout(() => s.destroy(), 10_000).unref();
    });
    // An origin that never answers the handshake: 524 after --origin-timeout (2 s here), as for a request.
    const silent = await rawRequest(port, handshake("/never"));
    assert.equal(silent.status, 524, silent.raw.slice(0, 300));
    assert.ok(silent.closed);
    const forged = origin.seen.filter((r) => r.headers["cf-connecting-ip"] === "10.9.9.9" || r.headers.host === "other-vhost.example");
    assert.deepEqual(forged, [], "no smuggled request reached the origin");
    assert.ok(origin.seen.some((r) => r.url === "/not-a-socket-either"));
  });

  it("a WebSocket handshake whose Connection lists the edge's own headers: the origin gets Connection: Upgrade, and the edge's CF-Connecting-IP", async () => {
    const listing = await rawRequest(
      port,
      "GET /listing-connection HTTP/1.1\r\nHost: www.proxy-test.example\r\nUpgrade: websocket\r\nConnection: Upgrade, CF-Connecting-IP, x-forwarded-for\r\n" +
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    );
    assert.equal(listing.status, 200, listing.raw.slice(0, 300));
    const seen = origin.seen.find((r) => r.url === "/listing-connection");
    assert.ok(seen, "the handshake reached the origin");
    // Before, the client's Connection went on as it was: a proxy at the origin's side drops the headers it lists.
    assert.equal(seen.headers.connection, "Upgrade");
    assert.equal(seen.headers.upgrade, "websocket");
    assert.equal(seen.headers["cf-connecting-ip"], "127.0.0.1");
    assert.equal(seen.headers["x-forwarded-for"], "127.0.0.1");
  });

  it("names of no zone here and the platform's own host are served as before (the API answers)", async () => {
    const r = await request(`${p.apiUrl}/user/tokens/verify`, { headers: p.headers() });
    assert.equal(r.statusCode, 200);
    await r.body.text();
    assert.notEqual((await get("unknown-zone.example")).status, 530);
  });
});
