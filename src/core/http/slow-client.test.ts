import assert from "node:assert/strict";
import { connect } from "node:net";
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

describe("a client that stops sending its request body", () => {
  let p: TestPlatform;
  before(async () => {
    p = await startTestPlatform({ args: ["--body-idle-timeout", "1"] });
  });
  after(() => p?.dispose());

  it("has its connection closed, on the API and on Worker traffic alike", async () => {
    const body = '{"title":"';
    for (const [path, host] of [
      [`/client/v4/accounts/${p.accountId}/storage/kv/namespaces`, "localhost"],
      ["/", "some-script.workers.example"],
    ]) {
      const head = `POST ${path} HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${p.token}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n${body}`;
      const seen = await exchange(p.url, head, 60_000);
      assert.ok(seen.closedByServer, `${host}${path}: the server kept a connection whose body stopped arriving`);
    }
  });

  it("keeps a connection whose body arrives slowly but keeps arriving, past the limit", async () => {
    const u = new URL(p.url);
    const chunks = 16;
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(u.port), u.hostname);
      let text = "";
      socket.on("data", (d) => (text += d.toString("latin1")));
      socket.on("error", reject);
      socket.on("close", () => resolve(text));
      socket.on("connect", async () => {
        const path = `/client/v4/accounts/${p.accountId}/storage/kv/namespaces`;
        socket.write(
          `POST ${path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${p.token}\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: ${chunks + 20}\r\n\r\n{"title":"`,
        );
        // A byte every 150 ms: 2.4 s in all, over twice the 1 s limit, never silent for long.
        for (let i = 0; i < chunks; i++) {
          await new Promise((r) => setTimeout(r, 150));
          if (!socket.destroyed) socket.write("s");
        }
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
