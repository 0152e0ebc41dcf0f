import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { request as httpRequest } from "node:http";
import WebSocket from "ws";
import type { TestPlatform } from "../../core/testing/platform.js";
import { openSocket, startPlatform, uploadScript } from "../testing/helpers.js";

/**
 * A WebSocket to a Worker counts toward the edge port's per-client connection limit for as long as it is open,
 * with the real platform and workerd. The test's client is 127.0.0.31 (any of 127.0.0.0/8 reaches the loopback
 * listener); the uploads come from 127.0.0.1, another client.
 */

let p: TestPlatform;
/** Every WebSocket the test opened, ended whatever the test's outcome (an open one would hold the platform's stop). */
const opened: WebSocket[] = [];
before(async () => {
  p = await startPlatform(["--edge-max-connections-per-client", "2", "--edge-max-connections-per-client-exempt", "none"]);
});
after(async () => {
  for (const ws of opened) ws.terminate();
  await p?.dispose();
});

const client = "127.0.0.31";

const ECHO = `export default {
  async fetch(req) {
    if (req.headers.get("upgrade") !== "websocket") return new Response("plain");
    const [client, server] = Object.values(new WebSocketPair());
    server.accept();
    server.addEventListener("message", (e) => server.send("echo:" + e.data));
    return new Response(null, { status: 101, webSocket: client });
  },
};`;

/** A plain request from the test's client address, on a connection of its own (closed after the answer). */
const plain = () =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = httpRequest(p.url, { agent: false, localAddress: client, headers: { host: "ws-count.workers.localhost", connection: "close" } }, (res) => {
      let body = "";
      res.on("data", (d: Buffer) => (body += d.toString()));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });

const echoes = (ws: WebSocket) =>
  new Promise<string>((resolve, reject) => {
    ws.once("message", (d) => resolve(d.toString()));
    ws.once("error", reject);
    ws.send("hi");
  });

test("open WebSockets count as the client's connections; a closed one frees its slot", { timeout: 180_000 }, async () => {
  assert.equal((await uploadScript(p, "ws-count", ECHO)).status, 200);

  const first = await openSocket(p, "ws-count", "/", client);
  const second = await openSocket(p, "ws-count", "/", client);
  opened.push(first, second);
  assert.equal(await echoes(second), "echo:hi");

  // Two WebSockets are the client's two connections: a third connection, plain HTTP or a WebSocket, is refused.
  const refused = await plain();
  assert.equal(refused.status, 429);
  assert.match(refused.body, /"code":10429/);
  const refusedSocket = await openSocket(p, "ws-count", "/", client).then(
    (ws) => (ws.terminate(), undefined),
    (e: { status?: number }) => e,
  );
  assert.equal(refusedSocket?.status, 429);

  // Closing a WebSocket gives its slot back (its close reaches the edge a moment after the client sees it).
  await new Promise<void>((resolve) => {
    first.once("close", () => resolve());
    first.terminate();
  });
  let answer = await plain();
  for (let attempt = 0; attempt < 50 && answer.status === 429; attempt++) answer = await plain();
  assert.equal(answer.status, 200);
  assert.equal(answer.body, "plain");
});
