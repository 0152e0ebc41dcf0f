import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { connect, type AddressInfo } from "node:net";
import { test } from "node:test";
import { Pool } from "undici";
import { passedRequestHeaders, relay, relayConnectOptions, relayableHeaders } from "./relay.js";

test("passedRequestHeaders: hop-by-hop and Connection-listed names dropped, repeats kept in order, the caller's own appended", () => {
  const raw = [
    "Host",
    "a.example",
    "Connection",
    "keep-alive, X-Private",
    "X-Private",
    "1",
    "TE",
    "trailers",
    "Set-Thing",
    "1",
    "set-thing",
    "2",
    "Expect",
    "100-continue",
    "CF-Connecting-IP",
    "203.0.113.9",
  ];
  assert.deepEqual(passedRequestHeaders(raw, new Set(["cf-connecting-ip"]), ["cf-connecting-ip", "198.51.100.1"]), [
    "host",
    "a.example",
    "Set-Thing",
    "1",
    "set-thing",
    "2",
    "cf-connecting-ip",
    "198.51.100.1",
  ]);
});

test("passedRequestHeaders: an HTTP/2 request's :authority is passed on as host, its other pseudo-headers never", () => {
  const raw = [":method", "GET", ":path", "/x", ":scheme", "https", ":authority", "h2.example", "accept", "*/*"];
  assert.deepEqual(passedRequestHeaders(raw, new Set(), []), ["host", "h2.example", "accept", "*/*"]);
  assert.deepEqual(passedRequestHeaders(raw, new Set(["host"]), ["host", "set.example"]), ["accept", "*/*", "host", "set.example"]);
});

test("relayableHeaders: hop-by-hop answer headers and those Connection lists are not relayed; content-length read", () => {
  const raw = ["Content-Length", "5", "Connection", "x-hop", "X-Hop", "1", "Keep-Alive", "timeout=5", "Set-Cookie", "a=1", "Set-Cookie", "b=2"].map((v) =>
    Buffer.from(v),
  );
  assert.deepEqual(relayableHeaders(raw), { list: ["content-length", "5", "set-cookie", "a=1", "set-cookie", "b=2"], contentLength: 5 });
  // Connection naming only hop-by-hop names (a kept-alive origin's usual answer), in any case and spacing.
  const keepAlive = ["Content-Length", "2", "Connection", "Keep-Alive", "ETag", '"x"'].map((v) => Buffer.from(v));
  assert.deepEqual(relayableHeaders(keepAlive), { list: ["content-length", "2", "etag", '"x"'], contentLength: 2 });
  const mixed = ["Connection", "keep-alive , Content-Length,TE", "Content-Length", "2", "X-A", "1", "Upgrade", "h2c"].map((v) => Buffer.from(v));
  assert.deepEqual(relayableHeaders(mixed), { list: ["x-a", "1"], contentLength: -1 });
});

/** Waits until `count()` has not grown for `quietMs` (generous bounds: the machine may be loaded), and answers it. */
async function settled(count: () => number, quietMs = 750, deadlineMs = 60_000): Promise<number> {
  const deadline = Date.now() + deadlineMs;
  let last = -1;
  let since = Date.now();
  while (Date.now() < deadline) {
    const now = count();
    if (now !== last) {
      last = now;
      since = Date.now();
    } else if (Date.now() - since >= quietMs) return now;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("the transfer never stopped: nothing holds it back");
}

const listen = (server: Server) => new Promise<number>((resolve) => server.listen(0, "127.0.0.1", () => resolve((server.address() as AddressInfo).port)));

test("relay: backpressure holds both ways with the larger write buffer; a reader that stops, stops the other side", async () => {
  const total = 64 * 1024 * 1024;
  const chunk = Buffer.alloc(64 * 1024, 120);
  let originSent = 0;
  let originReceived = 0;
  let originReading = false;
  // The origin: GET sends 64 MiB as fast as its client takes it; PUT takes nothing until told to.
  const origin = createServer((req, res) => {
    if (req.method === "PUT") {
      req.pause();
      req.on("data", (d: Buffer) => (originReceived += d.length));
      const poll = setInterval(() => {
        if (!originReading) return;
        clearInterval(poll);
        req.resume();
      }, 20);
      req.on("end", () => res.end(String(originReceived)));
      return;
    }
    res.writeHead(200, { "content-length": total });
    const write = () => {
      while (originSent < total) {
        originSent += chunk.length;
        if (!res.write(chunk)) return void res.once("drain", write);
      }
      res.end();
    };
    write();
  });
  const pool = new Pool(`http://127.0.0.1:${await listen(origin)}`, { connect: relayConnectOptions });
  const edge = createServer((req, res) =>
    relay(pool, res, {
      path: req.url ?? "/",
      method: req.method ?? "GET",
      headers: passedRequestHeaders(req.rawHeaders, new Set(), []),
      body: req.method === "PUT" ? req : null,
      failed: () => res.destroy(),
    }),
  );
  const port = await listen(edge);
  try {
    // Download: a client that reads nothing after the head. The origin is held back far short of the body.
    const download = connect(port, "127.0.0.1");
    download.write("GET /big HTTP/1.1\r\nhost: x\r\n\r\n");
    download.pause();
    const held = await settled(() => originSent);
    assert.ok(held < total / 2, `the origin sent ${held} of ${total} bytes to a client that read none`);
    // Once the client reads, the rest follows.
    let got = 0;
    download.on("data", (d: Buffer) => (got += d.length));
    download.resume();
    await settled(() => got);
    assert.ok(got > total, `the client got ${got} bytes (head and body)`);
    download.destroy();

    // Upload: an origin that reads nothing; the client is held back far short of its body.
    const upload = connect(port, "127.0.0.1");
    let clientSent = 0;
    await new Promise<void>((resolve) => upload.once("connect", resolve));
    upload.write(`PUT /up HTTP/1.1\r\nhost: x\r\ncontent-length: ${total}\r\n\r\n`);
    const send = () => {
      while (clientSent < total) {
        clientSent += chunk.length;
        if (!upload.write(chunk)) return void upload.once("drain", send);
      }
    };
    send();
    const sentHeld = await settled(() => clientSent);
    assert.ok(sentHeld < total / 2, `the client got ${sentHeld} of ${total} bytes out to an origin that read none`);
    let answer = "";
    upload.on("data", (d: Buffer) => (answer += d.toString("latin1")));
    originReading = true;
    await settled(() => originReceived);
    assert.equal(originReceived, total);
    await settled(() => answer.length);
    assert.match(answer, new RegExp(`^HTTP/1.1 200[^]*\\r\\n\\r\\n${total}$`));
    upload.destroy();
  } finally {
    await new Promise((r) => edge.close(r));
    await pool.destroy();
    await new Promise((r) => origin.close(r));
  }
});
