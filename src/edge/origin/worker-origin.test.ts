import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createServer, type IncomingMessage } from "node:http";
import { request } from "undici";
import WebSocket, { WebSocketServer } from "ws";
import type { TestPlatform } from "../../core/testing/platform.js";
import { createAccount, hit, startPlatform, uploadScript } from "../../workers/testing/helpers.js";
import { loopbackBlock, startOrigin, type SeenRequest } from "../testing/origins.js";

/**
 * Workers in front of an origin (issue 33 item 6), with real workerd and real origins on loopback: a Worker on a route
 * that calls fetch(request), or fetches another name of its zone, reaches the name's origin through the edge's
 * forwarding path (headers it set, the forwarding headers, the 52x pages), without running the zone's Worker again;
 * another tenant's proxied name, an address of the platform's host or its own account's zone without a route of its
 * are never reached by that shortcut.
 */
describe("Workers reach their own zone's origin through the edge", () => {
  const addr = loopbackBlock();
  let p: TestPlatform;
  let port: number;
  let zoneAId = "";
  let originA: { seen: SeenRequest[] };
  let originB: { seen: SeenRequest[] };
  const cleanups: (() => unknown)[] = [];
  const hooks = { after: (fn: () => unknown) => void cleanups.push(fn) };

  // The Worker of account A, on a route of www.wfront-a.example (its own front door: a loop if fetch(request) came back).
  const front = `export default {
    async fetch(request, env) {
      const url = new URL(request.url);
      const out = (r) => new Response(r.body, r);
      const failed = (e) => new Response("fetch failed: " + e.message, { status: 599 });
      if (url.pathname === "/other-tenant") return fetch("http://www.wfront-b.example/echo").then(out, failed);
      if (url.pathname === "/other-tenant-address") return fetch("http://${addr(2)}/echo", { headers: { host: "www.wfront-b.example" } }).then(out, failed);
      if (url.pathname === "/unrouted-zone") return fetch("http://www.wfront-c.example/echo").then(out, failed);
      if (url.pathname === "/sibling") return fetch("https://api.wfront-a.example/echo?from=worker", { headers: { "x-from-worker": "sibling" } }).then(out, failed);
      if (url.pathname === "/down") return fetch("http://down.wfront-a.example/").then(out, failed);
      if (url.pathname === "/ws-client") return talk("http://ws.wfront-a.example/socket");
      if (url.pathname === "/ws-other") return talk("http://www.wfront-b.example/socket");
      // A client's WebSocket handshake on the route: passed on as it came, the origin's socket answered to the client.
      if (request.headers.get("upgrade") === "websocket") return fetch(request);
      const req = new Request(request);
      req.headers.set("x-worker-set", "1");
      const answer = await fetch(req);
      const res = new Response(answer.body, answer);
      res.headers.set("x-through-worker", "1");
      return res;
    },
  };`;

  // The Worker opens a WebSocket itself (fetch() with Upgrade: websocket), says one thing and answers what it heard.
  const talkFn = `async function talk(target) {
      let r;
      try {
        r = await fetch(target, { headers: { upgrade: "websocket", "x-worker-ws": "1" } });
      } catch (e) {
        return new Response("fetch failed: " + e.message, { status: 599 });
      }
      if (!r.webSocket) return new Response("no websocket: " + r.status + " " + (await r.text()), { status: 502 });
      const ws = r.webSocket;
      ws.accept();
      const heard = new Promise((resolve) => ws.addEventListener("message", (e) => resolve(e.data)));
      ws.send("from worker");
      const text = await heard;
      ws.close(1000, "done");
      return new Response(text);
    }`;

  /** The WebSocket origin at addr(3) (ws.wfront-a.example): echoes with what it was told; a plain request gets 426. */
  const wsSeen: IncomingMessage["headers"][] = [];
  const startWsOrigin = async () => {
    const http = createServer((req, res) => {
      wsSeen.push(req.headers);
      res.writeHead(426, { "content-type": "text/plain" }).end("websocket only");
    });
    const wss = new WebSocketServer({ server: http });
    wss.on("connection", (ws, req) => {
      wsSeen.push(req.headers);
      ws.on("message", (m) =>
        ws.send(`echo ${m} host ${req.headers.host} worker ${req.headers["x-worker-ws"] ?? "-"} ray ${req.headers["cf-ray"] ? "yes" : "no"}`),
      );
    });
    await new Promise<void>((resolve) => http.listen(80, addr(3), resolve));
    cleanups.push(async () => {
      wss.close();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    });
  };

  before(async () => {
    await startWsOrigin();
    originA = await startOrigin(hooks, { address: addr(1), name: "a" });
    originB = await startOrigin(hooks, { address: addr(2), name: "b" });
    // Loopback origins are allowed for proxied records only: a Worker's other fetches still reach public addresses only.
    p = await startPlatform(["--origin-allow", "127.0.0.0/8", "--origin-timeout", "5", "--origin-connect-timeout", "2"]);
    port = Number(new URL(p.url).port);
    const zoneA = (await p.api("POST", "/zones", { name: "wfront-a.example", account: { id: p.accountId } })).body.result.id;
    const zoneC = (await p.api("POST", "/zones", { name: "wfront-c.example", account: { id: p.accountId } })).body.result.id;
    for (const [zone, name, content] of [
      [zoneA, "www", addr(1)],
      [zoneA, "api", addr(1)],
      [zoneA, "down", addr(9)],
      [zoneA, "ws", addr(3)],
      [zoneC, "www", addr(1)],
    ])
      assert.equal((await p.api("POST", `/zones/${zone}/dns_records`, { type: "A", name, content, proxied: true })).status, 200);
    const accountB = await createAccount(p, "wfront-b");
    const zoneB = (await p.api("POST", "/zones", { name: "wfront-b.example", account: { id: accountB } }, p.keyHeaders())).body.result.id;
    const rec = await p.api("POST", `/zones/${zoneB}/dns_records`, { type: "A", name: "www", content: addr(2), proxied: true }, p.keyHeaders());
    assert.equal(rec.status, 200);
    assert.equal((await uploadScript(p, "wfront", `${talkFn}\n${front}`)).status, 200);
    zoneAId = zoneA;
    const route = await p.api("POST", `/zones/${zoneA}/workers/routes`, { pattern: "*.wfront-a.example/*", script: "wfront" });
    assert.equal(route.status, 200, JSON.stringify(route.body));
  });
  after(async () => {
    await p?.dispose();
    for (const fn of cleanups) await fn();
  });

  const get = async (host: string, path: string, opts: { method?: string; body?: string; headers?: Record<string, string> } = {}) => {
    const res = await request(`http://127.0.0.1:${port}${path}`, {
      method: (opts.method ?? "GET") as "GET",
      body: opts.body,
      headers: { host, ...opts.headers },
    });
    return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
  };

  it("fetch(request) reaches the origin with the headers the Worker set and the forwarding headers, once (no loop)", async () => {
    const before = originA.seen.length;
    const r = await get("www.wfront-a.example", "/echo?q=1", { method: "POST", body: "hello", headers: { "x-client": "c", "content-type": "text/plain" } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers["x-through-worker"], "1", "the Worker ran");
    const seen = JSON.parse(r.text);
    assert.equal(seen.origin, "a");
    assert.equal(seen.method, "POST");
    assert.equal(seen.url, "/echo?q=1");
    assert.equal(seen.bodyBytes, 5);
    const h = seen.headers;
    assert.equal(h.host, "www.wfront-a.example");
    assert.equal(h["x-worker-set"], "1");
    assert.equal(h["x-client"], "c");
    assert.equal(h["cf-connecting-ip"], "127.0.0.1", "the client's address, as the Worker passed it on");
    assert.equal(h["x-forwarded-proto"], "http");
    assert.match(h["cf-ray"], /^[0-9a-f]{16}-EDGE$/);
    assert.equal(h["cdn-loop"], "edge-platform");
    assert.equal(h["x-edge-binding"], undefined, "the platform's internal credential never leaves it");
    assert.equal(originA.seen.length, before + 1, "the origin saw the request once: the route's Worker did not run again");
  });

  it("a URL on another name of its zone reaches that name's origin, with the URL's scheme as X-Forwarded-Proto", async () => {
    const r = await get("www.wfront-a.example", "/sibling");
    assert.equal(r.status, 200, r.text);
    const seen = JSON.parse(r.text);
    assert.equal(seen.headers.host, "api.wfront-a.example");
    assert.equal(seen.url, "/echo?from=worker");
    assert.equal(seen.headers["x-from-worker"], "sibling");
    assert.equal(seen.headers["x-forwarded-proto"], "https");
  });

  it("an origin that fails answers the Worker with the hosted 52x page", async () => {
    const r = await get("www.wfront-a.example", "/down");
    assert.equal(r.status, 521, r.text);
    assert.match(r.text, /Error 521/);
  });

  it("another tenant's proxied name, its origin's address, or a zone the Worker is not routed in are never reached by the shortcut", async () => {
    const seenB = originB.seen.length;
    const seenA = originA.seen.length;
    for (const path of ["/other-tenant", "/other-tenant-address", "/unrouted-zone"]) {
      const r = await get("www.wfront-a.example", path);
      // They go out as any fetch does: public addresses only (these names do not resolve publicly; loopback is refused).
      assert.equal(r.status, 599, `${path}: ${r.text}`);
      assert.match(r.text, /^fetch failed/);
    }
    assert.equal(originB.seen.length, seenB, "account B's origin was never reached");
    assert.equal(originA.seen.length, seenA, "a zone without the Worker's route is not its own");
  });

  it("WebSockets: a client's handshake through the route's fetch(request), and one the Worker opens, reach the zone's WebSocket origin", async () => {
    const before = wsSeen.length;
    const ws = new WebSocket(`ws://127.0.0.1:${port}/socket`, { headers: { host: "ws.wfront-a.example" } });
    await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
    const reply = new Promise<string>((resolve) => ws.once("message", (m) => resolve(String(m))));
    ws.send("hi");
    assert.equal(await reply, "echo hi host ws.wfront-a.example worker - ray yes");
    ws.close();
    const opened = await get("www.wfront-a.example", "/ws-client");
    assert.equal(opened.status, 200, opened.text);
    assert.equal(opened.text, "echo from worker host ws.wfront-a.example worker 1 ray yes");
    assert.equal(wsSeen.length, before + 2, "each handshake reached the origin once");
    const h = wsSeen[wsSeen.length - 1];
    assert.equal(h["cdn-loop"], "edge-platform");
    assert.equal(h["x-edge-binding"], undefined, "the platform's internal credential never leaves it");
  });

  it("WebSockets: with the zone's websockets setting off the origin gets the Worker's handshake without Upgrade; another tenant's name is never reached", async () => {
    const off = await p.api("PATCH", `/zones/${zoneAId}/settings/websockets`, { value: "off" });
    assert.equal(off.status, 200, JSON.stringify(off.body));
    try {
      const before = wsSeen.length;
      const refused = await get("www.wfront-a.example", "/ws-client");
      assert.equal(refused.status, 502, refused.text);
      assert.equal(refused.text, "no websocket: 426 websocket only");
      assert.equal(wsSeen.length, before + 1);
      assert.equal(wsSeen[wsSeen.length - 1].upgrade, undefined, "no Upgrade reached the origin");
      const client = new WebSocket(`ws://127.0.0.1:${port}/socket`, { headers: { host: "ws.wfront-a.example" } });
      await assert.rejects(new Promise((resolve, reject) => client.once("open", resolve).once("error", reject)));
    } finally {
      await p.api("PATCH", `/zones/${zoneAId}/settings/websockets`, { value: "on" });
    }
    const seenB = originB.seen.length;
    const other = await get("www.wfront-a.example", "/ws-other");
    assert.notEqual(other.status, 200, other.text);
    assert.equal(originB.seen.length, seenB, "account B's origin was never reached");
  });

  it("a Worker without a route (workers.dev style) fetching a proxied name of its account goes out as any fetch", async () => {
    const code = `export default { fetch: () => fetch("http://www.wfront-a.example/echo").then((r) => new Response("reached " + r.status), (e) => new Response("fetch failed", { status: 599 })) };`;
    assert.equal((await uploadScript(p, "wfront-dev", code)).status, 200);
    const before = originA.seen.length;
    const r = await hit(p, "wfront-dev", "/");
    assert.equal(r.status, 599, r.text);
    assert.equal(originA.seen.length, before);
  });

  it("a Worker's socket (connect()) reaches public addresses only, as before: loopback is refused", async () => {
    const code = `import { connect } from "cloudflare:sockets";
      export default { async fetch() {
        try {
          const socket = connect({ hostname: "${addr(1)}", port: 80 });
          await socket.opened;
          const writer = socket.writable.getWriter();
          await writer.write(new TextEncoder().encode("GET /echo HTTP/1.1\\r\\nhost: x\\r\\nconnection: close\\r\\n\\r\\n"));
          const { value } = await socket.readable.getReader().read();
          return new Response("connected: " + new TextDecoder().decode(value));
        } catch (e) {
          return new Response("refused: " + e.message, { status: 599 });
        }
      } };`;
    assert.equal((await uploadScript(p, "wfront-socket", code)).status, 200);
    const before = originA.seen.length;
    const r = await hit(p, "wfront-socket", "/");
    assert.equal(r.status, 599, r.text);
    assert.equal(originA.seen.length, before);
  });

  it("a Custom Domain's own hostname has no origin: fetch(request) there answers the 1000 page, never a loop", async () => {
    const code = `export default { fetch: async (request) => { const r = await fetch(request); return new Response(r.body, r); } };`;
    assert.equal((await uploadScript(p, "wfront-domain", code)).status, 200);
    const attached = await p.api("PUT", `/accounts/${p.accountId}/workers/domains`, { hostname: "shop.wfront-c.example", service: "wfront-domain" });
    assert.equal(attached.status, 200, JSON.stringify(attached.body));
    const r = await eventuallyAnswer(
      () => get("shop.wfront-c.example", "/"),
      (a) => a.status !== 404,
    );
    assert.equal(r.status, 403, r.text);
    assert.match(r.text, /Error 1000/);
  });
});

/** Asks until `done` holds for an answer (a route or domain is served once the table is read again), at most 30 s. */
async function eventuallyAnswer<T>(ask: () => Promise<T>, done: (a: T) => boolean): Promise<T> {
  const until = Date.now() + 30_000;
  for (;;) {
    const a = await ask();
    if (done(a) || Date.now() > until) return a;
    await new Promise((r) => setTimeout(r, 200));
  }
}
