import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { connect } from "node:net";
import { after, before, describe, it } from "node:test";
import { StalledBodies } from "./stalled-bodies.js";

/**
 * A real server on a free port whose requests `bodies` watches before `route` answers them (in the turn they
 * arrive); listening before the suite's tests, closed after them.
 */
function serveWatched(bodies: StalledBodies, route: (req: IncomingMessage, res: ServerResponse) => Promise<void>): { port: () => number } {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    bodies.watch(req, res);
    route(req, res).catch(() => res.destroy());
  });
  let port = 0;
  before(async () => {
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    port = (server.address() as AddressInfo).port;
  });
  after(() => {
    bodies.close();
    server.close();
  });
  return { port: () => port };
}

/**
 * The pace rules where the slowness is the server's, not the client's: a route that does not read its body yet. A
 * real server and real sockets, with a 1 s window and a floor of 1,000 bytes a second.
 */
describe("a request body the server itself is slow to take", () => {
  const bodies = new StalledBodies({ idleMs: 1000, minBytesPerSecond: 1000 });
  /** Per path: what the route waits for before it reads the body. */
  const waitBeforeReading = new Map<string, () => Promise<void>>();
  const server = serveWatched(bodies, async (req, res) => {
    await waitBeforeReading.get(req.url ?? "")?.();
    let bytes = 0;
    for await (const chunk of req) bytes += (chunk as Buffer).length;
    res.end(String(bytes));
  });

  /** Sends `body` as fast as the connection takes it; resolves with the whole answer once the server closed. */
  function post(path: string, body: Buffer): Promise<string> {
    return new Promise((resolve) => {
      const socket = connect(server.port(), "127.0.0.1");
      let answer = "";
      socket.on("data", (d) => (answer += d.toString("latin1")));
      socket.on("error", () => undefined);
      socket.on("close", () => resolve(answer));
      socket.on("connect", () => {
        socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: ${body.length}\r\n\r\n`);
        socket.write(body);
      });
    });
  }

  it("does not refuse a client while the route is not reading (its buffer is full), however long that lasts", async () => {
    // The route waits three windows before it reads: the client sent what the buffers hold and then nothing.
    waitBeforeReading.set("/late-reader", () => new Promise((r) => setTimeout(r, 3_000)));
    const body = Buffer.alloc(4 * 1024 * 1024, 0x61);
    const answer = await post("/late-reader", body);
    assert.match(answer, /^HTTP\/1\.1 200 /, answer.slice(0, 300));
    assert.ok(answer.endsWith(`\r\n\r\n${body.length}`), answer.slice(-200));
  });
});

describe("which requests are watched", () => {
  const bodies = new StalledBodies({ idleMs: 60_000, minBytesPerSecond: 500 });
  let arrived: () => void = () => undefined;
  const server = serveWatched(bodies, async (req, res) => {
    arrived();
    for await (const chunk of req) void chunk;
    res.end("ok");
  });

  it("not one whose body came with its head (it is complete by the end of the turn); one whose body is still to come", async () => {
    const socket = connect(server.port(), "127.0.0.1");
    await once(socket, "connect");
    let answers = "";
    socket.on("data", (d) => (answers += d.toString("latin1")));
    const answered = async (n: number) => {
      while ((answers.match(/HTTP\/1\.1 200/g) ?? []).length < n) await once(socket, "data");
    };
    // Head and body in one write: answered, and not held until the next look (up to a second here; the request
    // and its answer would stay reachable that long).
    socket.write("POST /whole HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello");
    await answered(1);
    assert.equal(bodies.watching, 0);
    // The head alone: once a turn has passed after it arrived, it is watched until its body comes.
    const got = new Promise<void>((resolve) => (arrived = resolve));
    socket.write("POST /later HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n");
    await got;
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(bodies.watching, 1);
    socket.end("later");
    await answered(2);
    socket.destroy();
  });
});

/**
 * The pace rules where the slowness is our event loop's: a look that comes long after its time (a long garbage
 * collection, synchronous work) found the client's bytes still unread in the kernel. The clock is the test's: each
 * look happens at the time the test sets, a real server and socket otherwise (a 1 s window: looks every 250 ms).
 */
describe("a request body while our own event loop stalls", () => {
  let clock = 0;
  const bodies = new StalledBodies({ idleMs: 1000, minBytesPerSecond: 1000 }, () => clock);
  /** Body bytes the route has taken in so far (of the one request under way). */
  let received = 0;
  const server = serveWatched(bodies, async (req, res) => {
    received = 0;
    for await (const chunk of req) received += (chunk as Buffer).length;
    res.end(String(received));
  });

  /** A request whose head and first bytes are in, watched from `clock`; its answer once the server closes. */
  async function started(length: number): Promise<{ socket: import("node:net").Socket; answer: Promise<string> }> {
    const socket = connect(server.port(), "127.0.0.1");
    let answer = "";
    socket.on("data", (d) => (answer += d.toString("latin1")));
    socket.on("error", () => undefined);
    const closed = new Promise<string>((resolve) => socket.on("close", () => resolve(answer)));
    await once(socket, "connect");
    bodies.look(); // lets go of a request of the test before, complete since
    assert.equal(bodies.watching, 0);
    socket.write(`POST / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: ${length}\r\n\r\n0123456789`);
    while (bodies.watching === 0) await new Promise((resolve) => setImmediate(resolve));
    return { socket, answer: closed };
  }

  it("does not refuse a client at a look that came after a stall longer than the window; the rules hold from there", async () => {
    const { socket, answer } = await started(4010);
    // The loop held for 5 s (five windows) with no look: the look that ends the stall judges no one.
    clock += 5000;
    bodies.look();
    assert.equal(bodies.watching, 1, "not refused for time our loop did not read");
    // From there the client has a whole window again: looks on time, with the floor's share sent in it, pass.
    socket.write(Buffer.alloc(2000, 0x61));
    while (received < 2010) await new Promise((resolve) => setImmediate(resolve));
    for (let i = 0; i < 4; i++) {
      clock += 250;
      bodies.look();
    }
    assert.equal(bodies.watching, 1);
    socket.end(Buffer.alloc(2000, 0x62));
    assert.match(await answer, /^HTTP\/1\.1 200 [^]*\r\n\r\n4010$/);
  });

  it("still refuses a client that sends nothing while the looks come on time", async () => {
    const { answer } = await started(100);
    for (let i = 0; i < 4; i++) {
      clock += 250;
      bodies.look();
    }
    assert.equal(bodies.watching, 0, "a window with no byte, every look on time: refused");
    assert.match(await answer, /^HTTP\/1\.1 408 /);
  });
});
