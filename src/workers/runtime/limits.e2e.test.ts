import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { request } from "undici";
import WebSocket from "ws";
import type { TestPlatform } from "../../core/testing/platform.js";
import { createAccount, hit, openSocket, startPlatform, uploadScript } from "../testing/helpers.js";
import { eventually } from "../../core/testing/eventually.js";

/**
 * The edge's bounds on Worker traffic, with the real platform and workerd: WebSocket slots in all and per account
 * (`--websockets-max`, `--websockets-per-account-max`) and how long a Worker may take to answer
 * (`--worker-answer-timeout`). Small limits make them reachable with a handful of connections.
 */

let p: TestPlatform;
let otherAccount: string;
before(async () => {
  p = await startPlatform(["--websockets-max", "3", "--websockets-per-account-max", "2", "--worker-answer-timeout", "2"]);
  otherAccount = await createAccount(p, "neighbour");
});
after(async () => {
  await p?.dispose();
});

const HANG_GUARD = { timeout: 180_000 };

const ECHO = `export default {
  async fetch(req) {
    if (req.headers.get("upgrade") !== "websocket") return new Response("plain");
    // Pending on a timer: a promise with nothing pending is called hung by workerd at once (a 500).
    if (new URL(req.url).pathname === "/never") await new Promise((resolve) => setTimeout(resolve, 3_600_000));
    const [client, server] = Object.values(new WebSocketPair());
    server.accept();
    server.addEventListener("message", (e) => server.send("echo:" + e.data));
    server.addEventListener("close", (e) => server.close(e.code, "bye"));
    return new Response(null, { status: 101, webSocket: client });
  },
};`;

const edgePort = () => new URL(p.url).port;

const refusal = async (script: string, path = "/") => {
  const err = (await openSocket(p, script, path).then(
    (ws) => {
      ws.terminate();
      return undefined;
    },
    (e: unknown) => e,
  )) as { status?: number; body?: string } | undefined;
  assert.ok(err, `an upgrade to ${script}${path} was expected to be refused`);
  return err;
};

const closedBoth = (sockets: WebSocket[]) =>
  Promise.all(sockets.map((ws) => new Promise<void>((resolve) => (ws.readyState === WebSocket.CLOSED ? resolve() : ws.once("close", () => resolve())))));

/** Whether a fresh upgrade to `script` gets through now (closing it at once). */
const admitted = async (script: string) => {
  try {
    (await openSocket(p, script)).terminate();
    return true;
  } catch {
    return false;
  }
};

test("one account holds at most its share of WebSocket slots; another account still gets in; the platform cap holds", HANG_GUARD, async () => {
  assert.equal((await uploadScript(p, "ws-a", ECHO)).status, 200);
  assert.equal((await uploadScript(p, "ws-b", ECHO, {}, { accountId: otherAccount, headers: p.keyHeaders() })).status, 200);

  const a1 = await openSocket(p, "ws-a");
  const a2 = await openSocket(p, "ws-a");
  const refused = await refusal("ws-a");
  assert.equal(refused.status, 429);
  assert.match(refused.body ?? "", /most one account may hold/);

  // The neighbour is not affected by the first account's two connections...
  const b1 = await openSocket(p, "ws-b");
  // ...until the platform-wide cap (3) is reached: that refusal is a 503 for everyone.
  const full = await refusal("ws-b");
  assert.equal(full.status, 503);
  assert.match(full.body ?? "", /3 WebSocket connections at most/);

  // The sockets that are open still work.
  const echoed = new Promise<string>((resolve) => a1.once("message", (d: Buffer) => resolve(d.toString())));
  a1.send("hi");
  assert.equal(await echoed, "echo:hi");

  // Closing frees the slots again (the edge sees the close a moment later).
  a1.close();
  b1.close();
  await closedBoth([a1, b1]);
  await eventually(() => admitted("ws-a"), "a slot of the first account to come free");
  await eventually(() => admitted("ws-b"), "a slot of the neighbour to come free");
  a2.close();
  await closedBoth([a2]);
});

test("an upgrade the script never answers holds its slot until the client leaves", HANG_GUARD, async () => {
  assert.equal((await uploadScript(p, "ws-slow", ECHO)).status, 200);
  // Two upgrades left waiting for an answer that never comes take both of the account's slots.
  const waiting = [0, 1].map(() => {
    const ws = new WebSocket(`ws://127.0.0.1:${edgePort()}/never`, { headers: { host: `ws-slow.workers.localhost:${edgePort()}` } });
    ws.on("error", () => {});
    return ws;
  });
  await eventually(async () => !(await admitted("ws-slow")), "the waiting upgrades to take the account's slots");
  assert.equal((await refusal("ws-slow")).status, 429);
  for (const ws of waiting) ws.terminate();
  await eventually(() => admitted("ws-slow"), "the slots of the abandoned upgrades to come free");
});

test("a Worker that does not start its answer in time gets the client a 504; one that goes silent mid-answer is cut", HANG_GUARD, async () => {
  const script = `export default {
    async fetch(req) {
      const path = new URL(req.url).pathname;
      // Pending on a timer: a promise with nothing pending is called hung by workerd at once (a 500).
      if (path === "/hang") await new Promise((resolve) => setTimeout(resolve, 3_600_000));
      if (path === "/stall") {
        const { readable, writable } = new TransformStream();
        const w = writable.getWriter();
        w.write(new TextEncoder().encode("first part\\n"));
        // The rest would come in an hour (a pending timer, so workerd does not call the answer hung itself).
        setTimeout(() => w.close(), 3_600_000);
        return new Response(readable);
      }
      return new Response("quick");
    },
  };`;
  assert.equal((await uploadScript(p, "slowpoke", script)).status, 200);
  assert.equal((await hit(p, "slowpoke", "/")).text, "quick");

  const hung = await hit(p, "slowpoke", "/hang");
  assert.equal(hung.status, 504);
  assert.match(hung.text, /did not start its answer within 2 s/);

  // The status and first part arrive; the rest never does, so the edge cuts the answer instead of holding it.
  const res = await request(`http://127.0.0.1:${edgePort()}/stall`, { headers: { host: `slowpoke.workers.localhost:${edgePort()}` } });
  assert.equal(res.statusCode, 200);
  await assert.rejects(res.body.text(), "an answer that went silent is cut, not left open");

  // The Worker still answers afterwards.
  assert.equal((await hit(p, "slowpoke", "/")).text, "quick");
});

test("the limits are checked when the platform starts", HANG_GUARD, async () => {
  for (const [flag, value] of [
    ["--websockets-per-account-max", "0"],
    ["--worker-answer-timeout", "-1"],
  ]) {
    await assert.rejects(startPlatform([flag!, value!]), new RegExp(flag!.slice(2)));
  }
});
