import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { after, before, test } from "node:test";
import WebSocket from "ws";
import type { TestPlatform } from "../../core/testing/platform.js";
import { hit, logEntries, openSocket, startPlatform, uploadScript } from "../testing/helpers.js";
import { eventually } from "../../core/testing/eventually.js";

/**
 * WebSockets through the edge port, end to end: the real platform, the scripts on workerd, the `ws` client. The
 * upgrade is addressed by Host like any worker request.
 */

let p: TestPlatform;
before(async () => {
  p = await startPlatform();
});
after(async () => {
  await p?.dispose();
});

const ECHO = (tag: string) => `export default {
  async fetch(req) {
    const url = new URL(req.url);
    if (req.headers.get("upgrade") !== "websocket") {
      return new Response(url.pathname === "/ip" ? req.headers.get("cf-connecting-ip") : "${tag} plain", { status: url.pathname === "/ws" ? 426 : 200 });
    }
    if (url.pathname === "/refuse") return new Response("no sockets here", { status: 403 });
    const [client, server] = Object.values(new WebSocketPair());
    server.accept();
    server.addEventListener("message", (e) => {
      if (e.data === "close-me") server.close(4001, "closed by the script");
      else server.send("${tag}:" + e.data + ":" + req.headers.get("cf-connecting-ip"));
    });
    server.addEventListener("close", (e) => server.close(e.code, "bye"));
    return new Response(null, { status: 101, webSocket: client });
  },
};`;

/** A Durable Object that takes WebSockets with the hibernation API, and a route that counts the ones it holds. */
const ROOM = `import { DurableObject } from "cloudflare:workers";
export class Room extends DurableObject {
  async fetch(req) {
    if (new URL(req.url).pathname === "/count") return Response.json({ sockets: this.ctx.getWebSockets().length });
    const [client, server] = Object.values(new WebSocketPair());
    this.ctx.acceptWebSocket(server);
    return new Response(null, { status: 101, webSocket: client });
  }
  async webSocketMessage(ws, message) {
    const n = ((await this.ctx.storage.get("n")) ?? 0) + 1;
    await this.ctx.storage.put("n", n);
    ws.send(JSON.stringify({ message, n, sockets: this.ctx.getWebSockets().length }));
  }
  async webSocketClose(ws, code) {
    ws.close(code === 1005 || code === 1006 ? 1000 : code, "bye");
  }
}
export default {
  fetch(req, env) {
    return env.ROOM.get(env.ROOM.idFromName("lobby")).fetch(req);
  },
};`;

const ROOM_METADATA = {
  bindings: [{ type: "durable_object_namespace", name: "ROOM", class_name: "Room" }],
  migrations: { new_tag: "v1", steps: [{ new_sqlite_classes: ["Room"] }] },
};

/** A script that takes WebSockets and never answers a close (no "close" listener): the closing handshake never ends. */
const DEAF = `export default {
  fetch() {
    const [client, server] = Object.values(new WebSocketPair());
    server.accept();
    return new Response(null, { status: 101, webSocket: client });
  },
};`;

/** A hang guard, not a timing check: a test that waits for a message that never comes fails instead of hanging. */
const HANG_GUARD = { timeout: 180_000 };

const edgePort = () => new URL(p.url).port;

/** Messages of `ws` as they arrive; `next()` waits for the next one. */
function inbox(ws: WebSocket): { next(): Promise<string> } {
  const queued: string[] = [];
  const waiting: ((m: string) => void)[] = [];
  ws.on("message", (data: Buffer) => {
    const m = data.toString();
    const w = waiting.shift();
    if (w) w(m);
    else queued.push(m);
  });
  return {
    next: () => (queued.length ? Promise.resolve(queued.shift()!) : new Promise((resolve) => waiting.push(resolve))),
  };
}

const closed = (ws: WebSocket) =>
  new Promise<{ code: number; reason: string }>((resolve) => ws.once("close", (code, reason) => resolve({ code, reason: reason.toString() })));

test("a script's WebSocketPair echoes through the edge; either side closes cleanly; the client address is the edge's", HANG_GUARD, async () => {
  assert.equal((await uploadScript(p, "ws-echo", ECHO("v1"))).status, 200);
  assert.equal((await hit(p, "ws-echo", "/")).text, "v1 plain", "plain requests still work");
  const ws = await openSocket(p, "ws-echo", "/chat?room=1");
  const box = inbox(ws);
  ws.send("hello");
  assert.equal(await box.next(), "v1:hello:127.0.0.1");
  // A big message crosses both hops intact (workerd takes messages up to 1 MiB).
  const big = "x".repeat(512 * 1024);
  ws.send(big);
  assert.equal(await box.next(), `v1:${big}:127.0.0.1`);
  const byClient = closed(ws);
  ws.close(1000, "done");
  assert.deepEqual(await byClient, { code: 1000, reason: "bye" });

  const ws2 = await openSocket(p, "ws-echo");
  const byScript = closed(ws2);
  ws2.send("close-me");
  assert.deepEqual(await byScript, { code: 4001, reason: "closed by the script" });
});

test("an upgrade the script refuses is relayed as its answer; unknown scripts are a 404; the API ignores upgrades", HANG_GUARD, async () => {
  await assert.rejects(openSocket(p, "ws-echo", "/refuse"), (e: any) => e.status === 403 && e.body === "no sockets here");
  await assert.rejects(openSocket(p, "ws-nobody"), (e: any) => e.status === 404 && /No worker is deployed/.test(e.body));
  // An upgrade request that is not for a worker (here h2c, to the platform itself) is answered as a plain request.
  const raw = await rawRequest(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n`);
  assert.match(raw, /^HTTP\/1.1 200 /);
  assert.match(raw, /"status":"ok"/);
});

/** Sends `text` on a new connection to the edge port and returns everything it answers until it closes. */
function rawRequest(text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect(Number(edgePort()), "127.0.0.1", () => s.write(text));
    let out = "";
    s.on("data", (d) => (out += d.toString()));
    s.on("end", () => resolve(out));
    s.on("error", reject);
  });
}

/**
 * The edge's ends of TCP connections from these client ports that are still open (any state but TIME_WAIT): a client
 * that vanished leaves its edge socket in CLOSE_WAIT until the edge closes it.
 */
function edgeEndsOpen(clientPorts: ReadonlySet<number>): number {
  const port = Number(edgePort());
  let open = 0;
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    for (const line of readFileSync(table, "utf8").split("\n").slice(1)) {
      const [, local, remote, state] = line.trim().split(/\s+/);
      if (!local || !remote) continue;
      const localPort = parseInt(local.split(":")[1]!, 16);
      const remotePort = parseInt(remote.split(":")[1]!, 16);
      if (localPort === port && clientPorts.has(remotePort) && state !== "06") open++;
    }
  }
  return open;
}

test("clients that vanish without a close leave nothing open on the edge, and the Durable Object sees them go", HANG_GUARD, async () => {
  assert.equal((await uploadScript(p, "ws-room", ROOM, ROOM_METADATA)).status, 200);
  const count = async () => JSON.parse((await hit(p, "ws-room", "/count")).text).sockets as number;
  assert.equal(await count(), 0);
  const sockets = await Promise.all(Array.from({ length: 20 }, () => openSocket(p, "ws-room")));
  const box = inbox(sockets[0]!);
  sockets[0]!.send("hi");
  const first = JSON.parse(await box.next());
  assert.equal(first.message, "hi");
  assert.equal(first.sockets, 20);
  const ports = new Set(sockets.map((ws) => (ws as unknown as { _socket: Socket })._socket.localPort!));
  assert.equal(edgeEndsOpen(ports), 20);
  for (const ws of sockets) ws.terminate(); // TCP closed outright: no close frame
  await eventually(async () => (await count()) === 0, "the object to see every socket go", 30_000);
  await eventually(() => edgeEndsOpen(ports) === 0, "the edge to close its end of each connection", 30_000);
});

test("a Durable Object accepts WebSockets with the hibernation API and keeps its storage across them", HANG_GUARD, async () => {
  const a = await openSocket(p, "ws-room");
  const b = await openSocket(p, "ws-room");
  const boxA = inbox(a);
  const boxB = inbox(b);
  a.send("from a");
  const one = JSON.parse(await boxA.next());
  b.send("from b");
  const two = JSON.parse(await boxB.next());
  assert.equal(one.sockets, 2);
  assert.equal(two.n, one.n + 1, "one object, one storage, for both sockets");
  const done = closed(a);
  a.close(1000);
  assert.equal((await done).code, 1000);
  b.close(1000);
});

test("a redeploy closes the sockets open to the old version at once; new ones reach the new version", HANG_GUARD, async () => {
  const ws = await openSocket(p, "ws-echo");
  const box = inbox(ws);
  ws.send("before");
  assert.equal(await box.next(), "v1:before:127.0.0.1");
  const gone = closed(ws);
  const started = Date.now();
  assert.equal((await uploadScript(p, "ws-echo", ECHO("v2"))).status, 200);
  const { code } = await gone;
  assert.equal(code, 1006, "the connection to the old version was cut (no close frame)");
  // The upload did not wait out workerd's 30 s drain for the open socket (a hang guard, not a timing check).
  assert.ok(Date.now() - started < 25_000);
  const again = await openSocket(p, "ws-echo");
  const box2 = inbox(again);
  again.send("after");
  assert.equal(await box2.next(), "v2:after:127.0.0.1");
  again.close(1000);
  // A Durable Object Worker (whose versions never overlap) with a socket open redeploys too.
  const room = await openSocket(p, "ws-room");
  const roomGone = closed(room);
  const v2 = ROOM.replace("sockets:", "version: 2, sockets:");
  assert.equal((await uploadScript(p, "ws-room", v2, { bindings: ROOM_METADATA.bindings })).status, 200);
  assert.equal((await roomGone).code, 1006);
  assert.equal(JSON.parse((await hit(p, "ws-room", "/count")).text).version, 2);
});

test("a workerd that dies closes its sockets; after the restart new ones work", HANG_GUARD, async () => {
  const ws = await openSocket(p, "ws-echo");
  const gone = closed(ws);
  const live = logEntries(p).filter((e) => (e.msg === "worker version live" || e.msg === "workerd restarted") && e.script === "ws-echo");
  const pid = live.at(-1)!.workerd_pid as number;
  process.kill(pid, "SIGKILL");
  assert.equal((await gone).code, 1006);
  await eventually(() => logEntries(p).some((e) => e.msg === "workerd restarted" && e.script === "ws-echo"), "the restart");
  const again = await openSocket(p, "ws-echo");
  const box = inbox(again);
  again.send("back");
  assert.equal(await box.next(), "v2:back:127.0.0.1");
  again.close(1000);
});

const portOf = (ws: WebSocket) => (ws as unknown as { _socket: Socket })._socket.localPort!;

test("a client's close the script never answers, or a client's FIN, ends the connection on both sides", HANG_GUARD, async () => {
  assert.equal((await uploadScript(p, "ws-deaf", DEAF)).status, 200);
  const ws = await openSocket(p, "ws-deaf");
  const ports = new Set([portOf(ws)]);
  const gone = closed(ws);
  // `ws` waits 30 s for the answer to its close before it gives up itself; the edge cuts the connection first.
  ws.close(1000, "done");
  assert.equal((await gone).code, 1006, "no close frame came back: the edge cut the connection");
  await eventually(() => edgeEndsOpen(ports) === 0, "the edge to close its end of the connection", 30_000);

  const half = await openSocket(p, "ws-deaf");
  const halfPorts = new Set([portOf(half)]);
  const halfGone = closed(half);
  (half as unknown as { _socket: Socket })._socket.end(); // TCP FIN without a close frame; the client still reads
  await halfGone;
  await eventually(() => edgeEndsOpen(halfPorts) === 0, "the edge to close its end of the half-closed connection", 30_000);
});

// Last: it stops the platform.
test("stopping the platform sends open WebSockets close 1001 and finishes, also when the script would never close them", HANG_GUARD, async () => {
  const ws = await openSocket(p, "ws-deaf");
  const gone = closed(ws);
  await p.stop(); // completes within the hang guard, or this test fails
  assert.deepEqual(await gone, { code: 1001, reason: "the platform is stopping" });
});
