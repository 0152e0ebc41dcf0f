import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer } from "node:http";
import { BlockList, connect, createServer as createNetServer, type Socket } from "node:net";
import { after, before, describe, it, test } from "node:test";
import { eventually } from "../testing/eventually.js";
import { startTestPlatform, type TestPlatform } from "../testing/platform.js";
import { clientKey, ConnectionLimits } from "./connection-limits.js";

/** A raw connection from `localAddress` (any of 127.0.0.0/8 reaches the loopback listener on Linux). */
async function open(url: string, localAddress: string): Promise<{ socket: Socket; text: () => string }> {
  const u = new URL(url);
  const socket = connect({ port: Number(u.port), host: u.hostname, localAddress });
  let text = "";
  socket.on("data", (d) => (text += d.toString("latin1")));
  socket.on("error", () => undefined);
  await once(socket, "connect");
  return { socket, text: () => text };
}

/** Sends `request` and waits for one whole answer (its head and Content-Length bytes), or the connection's end. */
async function ask(conn: { socket: Socket; text: () => string }, request: string): Promise<string> {
  const start = conn.text().length;
  conn.socket.write(request);
  for (;;) {
    const seen = conn.text().slice(start);
    const headEnd = seen.indexOf("\r\n\r\n");
    const length = /content-length: (\d+)/i.exec(seen)?.[1];
    if (headEnd >= 0 && length !== undefined && seen.length >= headEnd + 4 + Number(length)) return seen;
    if (conn.socket.destroyed || conn.socket.readableEnded) return seen;
    await Promise.race([once(conn.socket, "data"), once(conn.socket, "close")]);
  }
}

const health = "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n";

describe("connection limits on the edge port", () => {
  let p: TestPlatform;
  const held: Socket[] = [];
  before(async () => {
    p = await startTestPlatform({
      // Loopback is exempt by default (a local reverse proxy); the test's clients are loopback addresses.
      args: ["--edge-max-connections", "4", "--edge-max-connections-per-client", "2", "--edge-max-connections-per-client-exempt", "none"],
    });
  });
  after(() => {
    for (const s of held) s.destroy();
    return p?.dispose();
  });

  /** Opens a connection that is served (one answered request) and keeps it open. */
  async function hold(localAddress: string): Promise<Socket> {
    const conn = await open(p.url, localAddress);
    assert.match(await ask(conn, health), /^HTTP\/1\.1 200 /, `a connection from ${localAddress} within the limits is served`);
    held.push(conn.socket);
    return conn.socket;
  }

  it("answers a client's connection past its share 429 and closes it; other clients are served; a closed connection frees its slot", async () => {
    const first = await hold("127.0.0.11");
    await hold("127.0.0.11");

    const over = await open(p.url, "127.0.0.11");
    const refused = await ask(over, health);
    assert.match(refused, /^HTTP\/1\.1 429 /, refused.slice(0, 300));
    assert.match(refused, /connection: close/i);
    assert.match(refused, /"success":false,"errors":\[\{"code":10429,"message":"This client address has 2 connections open/);
    if (!over.socket.destroyed) await once(over.socket, "close");

    // A WebSocket handshake on a refused connection is refused the same way, before any service sees it.
    const overUpgrade = await open(p.url, "127.0.0.11");
    const upgrade = await ask(
      overUpgrade,
      "GET /ws HTTP/1.1\r\nHost: some-script.workers.example\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
    );
    assert.match(upgrade, /^HTTP\/1\.1 429 /, upgrade.slice(0, 300));

    // Another address is another client.
    await hold("127.0.0.12");

    // A slot frees when a connection closes (its close reaches the server a moment after the client sees it).
    first.destroy();
    let again = "";
    for (let attempt = 0; attempt < 50 && !/^HTTP\/1\.1 200 /.test(again); attempt++) {
      const conn = await open(p.url, "127.0.0.11");
      again = await ask(conn, health);
      if (/^HTTP\/1\.1 200 /.test(again)) held.push(conn.socket);
      else conn.socket.destroy();
    }
    assert.match(again, /^HTTP\/1\.1 200 /, "a closed connection's slot was not given back");
  });

  it("answers a connection past the node's limit 503 and closes it", async () => {
    // Three are held from the test before; each new address is a new client, so only the node's limit (4) stops them.
    let refused = "";
    let served = 0;
    for (let i = 0; i < 6 && !refused; i++) {
      const conn = await open(p.url, `127.0.0.${20 + i}`);
      const answer = await ask(conn, health);
      if (/^HTTP\/1\.1 200 /.test(answer)) {
        served++;
        held.push(conn.socket);
      } else refused = answer;
    }
    assert.match(refused, /^HTTP\/1\.1 503 /, refused.slice(0, 300));
    assert.match(refused, /"code":10503/);
    assert.ok(served <= 1, `${served} more connections were served past the node's limit of 4`);
  });
});

test("clients are counted by IPv4 address and by IPv6 /64", () => {
  assert.equal(clientKey("192.0.2.7", "IPv4"), "192.0.2.7");
  assert.equal(clientKey("::ffff:192.0.2.7", "IPv6"), "192.0.2.7");
  assert.equal(clientKey("2001:db8:1:2:aaaa::1", "IPv6"), "2001:0db8:0001:0002::/64");
  assert.equal(clientKey("2001:db8:1:2::ffff", "IPv6"), clientKey("2001:0DB8:1:2:1:2:3:4", "IPv6"));
  assert.notEqual(clientKey("2001:db8:1:2::1", "IPv6"), clientKey("2001:db8:1:3::1", "IPv6"));
  assert.equal(clientKey("::1", "IPv6"), "0000:0000:0000:0000::/64");
  assert.equal(clientKey("fe80::1%eth0", "IPv6"), "fe80:0000:0000:0000::/64");
  assert.equal(clientKey("", undefined), undefined);
});

test("a connection counted where it was accepted (the HTTPS port) and handed to the HTTP server counts once", async () => {
  const limits = new ConnectionLimits({ max: 10, perClientMax: 2, perClientExempt: new BlockList() });
  // As the edge's listener does (app.ts): a connection marked for refusal gets its refusal's status.
  const http = createServer((req, res) => {
    const refusal = limits.refusalFor(req.socket);
    const body = refusal ? "refused" : "ok";
    res.writeHead(refusal?.status ?? 200, { connection: refusal ? "close" : "keep-alive", "content-length": body.length }).end(body);
  });
  limits.install(http);
  // Stands for the HTTPS port: counts at accept, then hands the connection over (a TLS socket there; the TCP one here).
  const front = createNetServer((socket) => {
    if (!limits.admitAtAccept(socket)) return;
    limits.handOver(socket);
    http.emit("connection", socket);
  });
  await new Promise<void>((resolve) => front.listen(0, "127.0.0.1", resolve));
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const url = (s: { address(): unknown }) => `http://127.0.0.1:${(s.address() as { port: number }).port}`;
  const conns: Socket[] = [];
  try {
    for (let i = 0; i < 2; i++) {
      const conn = await open(url(front), "127.0.0.31");
      conns.push(conn.socket);
      assert.match(await ask(conn, health), /^HTTP\/1\.1 200 /, "within the client's share of 2, counted once each");
    }
    // The share is taken: past it, a connection to the front is closed at accept, one to the HTTP server answered 429.
    const past = await open(url(front), "127.0.0.31");
    conns.push(past.socket);
    if (!past.socket.destroyed) await once(past.socket, "close");
    const plain = await open(url(http), "127.0.0.31");
    conns.push(plain.socket);
    assert.match(await ask(plain, health), /^HTTP\/1\.1 429 /);
    // What the open-connections gauge shows (edgeplatform_edge_open_connections): the HTTPS port's two, no refused one.
    assert.deepEqual(limits.openConnections, { plain: 0, tls: 2 });
    const another = await open(url(http), "127.0.0.32");
    conns.push(another.socket);
    assert.match(await ask(another, health), /^HTTP\/1\.1 200 /);
    assert.deepEqual(limits.openConnections, { plain: 1, tls: 2 });
    for (const s of conns) s.destroy();
    await eventually(() => limits.openConnections.plain === 0 && limits.openConnections.tls === 0, "closed connections no longer counted");
  } finally {
    for (const s of conns) s.destroy();
    http.closeAllConnections();
    await new Promise((resolve) => front.close(resolve));
    await new Promise((resolve) => http.close(resolve));
  }
});
