import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import { after, before, describe, it } from "node:test";
import { startTestPlatform, type TestPlatform } from "../testing/platform.js";

/** What a raw connection saw: everything the server sent, once the server closed it (or the guard gave up). */
function exchange(url: string, head: string, guardMs: number): Promise<{ closedByServer: boolean; answer: string }> {
  const u = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(u.port), u.hostname, () => socket.write(head));
    let answer = "";
    socket.on("data", (d) => (answer += d.toString("latin1")));
    socket.on("error", () => undefined);
    // A hang guard, not a timing check: without the limit the server never closes, and the test must end.
    const guard = setTimeout(() => {
      socket.destroy();
      resolve({ closedByServer: false, answer });
    }, guardMs);
    socket.on("close", () => {
      clearTimeout(guard);
      resolve({ closedByServer: true, answer });
    });
  });
}

/** Writes `text` on `socket` a piece at a time, every `everyMs`, until it is all sent or the server closed. */
async function trickle(socket: Socket, text: string, pieceBytes: number, everyMs: number): Promise<void> {
  for (let i = 0; i < text.length && !socket.destroyed; i += pieceBytes) {
    await new Promise((r) => setTimeout(r, everyMs));
    if (!socket.destroyed) socket.write(text.slice(i, i + pieceBytes));
  }
}

/** Opens a raw connection, sends `first`, then trickles `rest`; resolves with what the server sent once it closed. */
function trickled(url: string, first: string, rest: string, pieceBytes: number, everyMs: number): Promise<{ closedByServer: boolean; answer: string }> {
  const u = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(u.port), u.hostname);
    let answer = "";
    let gaveUp = false;
    socket.on("data", (d) => (answer += d.toString("latin1")));
    socket.on("error", () => undefined);
    socket.on("close", () => resolve({ closedByServer: !gaveUp, answer }));
    socket.on("connect", async () => {
      socket.write(first);
      await trickle(socket, rest, pieceBytes, everyMs);
      // Everything sent and the server still holding on: not what the test expects, and the test must end.
      gaveUp = !socket.destroyed;
      socket.destroy();
    });
  });
}

const windowSeconds = 1;
// Bytes a second over each window: a byte every 400 ms is under it, 8 bytes every 150 ms well over it.
const minRate = 4;

describe("a client that sends its request too slowly", () => {
  let p: TestPlatform;
  before(async () => {
    p = await startTestPlatform({
      args: ["--body-idle-timeout", String(windowSeconds), "--body-min-rate", String(minRate), "--request-head-timeout", "1"],
    });
  });
  after(() => p?.dispose());

  it("is refused with a 408 when its body stops arriving, on the API and on Worker traffic alike", async () => {
    const body = '{"title":"';
    for (const [path, host] of [
      [`/client/v4/accounts/${p.accountId}/storage/kv/namespaces`, "localhost"],
      ["/", "some-script.workers.example"],
    ]) {
      const head = `POST ${path} HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${p.token}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n${body}`;
      const seen = await exchange(p.url, head, 60_000);
      assert.ok(seen.closedByServer, `${host}${path}: the server kept a connection whose body stopped arriving`);
      assert.match(seen.answer, /^HTTP\/1\.1 408 /, `${host}${path}: ${seen.answer.slice(0, 300)}`);
      assert.match(seen.answer, /"code":10408,"message":"The request body stopped arriving/);
      assert.match(seen.answer, /connection: close/i);
    }
  });

  it("is refused with a 408 when its body keeps arriving, but under the floor (a byte at a time, never silent for the idle limit)", async () => {
    const path = `/client/v4/accounts/${p.accountId}/storage/kv/namespaces`;
    for (const [target, host] of [
      [path, "localhost"],
      ["/", "some-script.workers.example"],
    ]) {
      const head = `POST ${target} HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${p.token}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"title":"`;
      // At most 50 bytes (20 s) are sent: without the floor the idle limit never fires and the test ends there.
      const seen = await trickled(p.url, head, "s".repeat(50), 1, 400);
      assert.ok(seen.closedByServer, `${host}: the server kept a body trickled under the floor`);
      assert.match(seen.answer, /^HTTP\/1\.1 408 /, `${host}: ${seen.answer.slice(0, 300)}`);
      assert.match(seen.answer, new RegExp(`"code":10408,"message":"The request body arrived slower than ${minRate} bytes a second over ${windowSeconds} s"`));
    }
  });

  it("is refused with a 408 when its head trickles in a byte at a time past the head limit", async () => {
    const head = `GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Padding: ${"p".repeat(300)}\r\n\r\n`;
    // 2 of the head's bytes are sent at once, the rest one every 100 ms (30 s in all, far past the 1 s limit).
    const seen = await trickled(p.url, head.slice(0, 2), head.slice(2), 1, 100);
    assert.ok(seen.closedByServer, "the server waited for a head that trickled in byte by byte");
    assert.match(seen.answer, /^HTTP\/1\.1 408 /, seen.answer.slice(0, 300));
    assert.match(seen.answer, /"code":10408,"message":"The request head did not arrive in time"/);
  });

  it("keeps a connection whose body arrives slowly but over the floor, past the limit", async () => {
    const u = new URL(p.url);
    const chunks = 16;
    const piece = "s".repeat(8);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(u.port), u.hostname);
      let text = "";
      socket.on("data", (d) => (text += d.toString("latin1")));
      socket.on("error", reject);
      socket.on("close", () => resolve(text));
      socket.on("connect", async () => {
        const path = `/client/v4/accounts/${p.accountId}/storage/kv/namespaces`;
        socket.write(
          `POST ${path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${p.token}\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: ${chunks * piece.length + 20}\r\n\r\n{"title":"`,
        );
        // 8 bytes every 150 ms (about 13 times the floor): 2.4 s in all, over twice the 1 s window.
        await trickle(socket, piece.repeat(chunks), piece.length, 150);
        if (!socket.destroyed) socket.write('-trickle"}');
      });
    });
    assert.match(answer, /^HTTP\/1\.1 200/, answer.slice(0, 300));
  });

  it("keeps a connection whose request was complete (keep-alive between requests is its own limit)", async () => {
    const head = `GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n`;
    // Past the body limit (1 s) and well before keep-alive's (65 s): still open, the answer sent.
    const seen = await exchange(p.url, head, 5_000);
    assert.match(seen.answer, /^HTTP\/1\.1 200/);
    assert.equal(seen.closedByServer, false);
  });
});
