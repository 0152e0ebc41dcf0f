import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import { createLogger } from "../../core/logger.js";
import { DnsTcpListener } from "./tcp.js";

/** Hang guard for waits: generous, since the machine may be busy. */
const GUARD_MS = 20_000;
const LIMITS = { maxClients: 16, maxClientsPerAddress: 16, idleTimeoutMs: 10_000, messageTimeoutMs: 5_000, maxLifetimeMs: 60_000 };

/** A message whose first four bytes say which question (`tag`) and which message of its answer (`n`) it is. */
const message = (tag: number, n: number, size = 64) => {
  const b = Buffer.alloc(size);
  b.writeUInt16BE(tag, 0);
  b.writeUInt16BE(n % 65536, 2);
  return b;
};

const framed = (msg: Buffer) => Buffer.concat([Buffer.from([msg.length >> 8, msg.length & 0xff]), msg]);

/** What a streamed answer did: messages produced, whether it was finished or stopped, and what happened meanwhile. */
interface Production {
  produced: number;
  stopped: boolean;
  finished: boolean;
  /** Messages produced when an immediate queued as the stream began ran. */
  immediateRanAt?: number;
}

/**
 * DnsTcpListener with answers produced as the listener asks (an AXFR of a large zone): over real TCP on loopback, with
 * a responder that streams `count` messages for question tag 1 and answers any other tag with one message.
 */
describe("DNS over TCP: a streamed answer", () => {
  let listener: DnsTcpListener;
  let port: number;
  let count = 0;
  let production: Production;
  const asked: number[] = [];

  before(async () => {
    listener = new DnsTcpListener(
      LIMITS,
      (msg) => {
        const tag = msg.readUInt16BE(0);
        asked.push(tag);
        if (tag !== 1) return [message(tag, 0)];
        const p: Production = { produced: 0, stopped: false, finished: false };
        production = p;
        return (function* () {
          setImmediate(() => (p.immediateRanAt = p.produced));
          try {
            for (let n = 0; n < count; n++) {
              p.produced++;
              yield message(1, n, 1024);
            }
            p.finished = true;
          } finally {
            if (!p.finished) p.stopped = true;
          }
        })();
      },
      createLogger({ level: "silent" }),
    );
    port = await listener.listen(0, "127.0.0.1");
  });
  after(() => listener.close());

  /** Opens a connection and sends `tags` as questions in one write; resolves with the answers' (tag, n) once `want` have come. */
  const ask = (tags: number[], want: number) =>
    new Promise<[number, number][]>((resolve, reject) => {
      const got: [number, number][] = [];
      const socket = net.connect({ port, host: "127.0.0.1" });
      const guard = setTimeout(() => {
        socket.destroy();
        reject(new Error(`${got.length} of ${want} messages after ${GUARD_MS} ms`));
      }, GUARD_MS);
      let buf = Buffer.alloc(0);
      socket.on("data", (d) => {
        buf = Buffer.concat([buf, d]);
        while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
          const m = buf.subarray(2, 2 + buf.readUInt16BE(0));
          got.push([m.readUInt16BE(0), m.readUInt16BE(2)]);
          buf = buf.subarray(2 + m.length);
        }
        if (got.length >= want) {
          clearTimeout(guard);
          socket.destroy();
          resolve(got);
        }
      });
      socket.on("error", reject);
      socket.write(Buffer.concat(tags.map((t) => framed(message(t, 0)))));
    });

  it("is written whole and in order over many turns of the event loop, and the next question on the connection is answered after it", async () => {
    count = 5000;
    asked.length = 0;
    const got = await ask([1, 2], count + 1);
    assert.equal(got.length, count + 1);
    for (let n = 0; n < count; n++) assert.deepEqual(got[n], [1, n % 65536], `message ${n}`);
    assert.deepEqual(got[count], [2, 0], "the second question's answer comes after the whole stream");
    assert.deepEqual(asked, [1, 2]);
    assert.ok(production.finished);
    // An immediate queued when the stream began ran before its last message was produced: the loop was not held.
    assert.ok(production.immediateRanAt !== undefined && production.immediateRanAt < count, `immediate ran after ${production.immediateRanAt} messages`);
  });

  it("holds the connection's next question until the stream is done", async () => {
    count = 20_000; // 20 MB: more than loopback buffers take for a client that has not begun to read
    asked.length = 0;
    let askedDuring: number[] | undefined;
    const socket = net.connect({ port, host: "127.0.0.1" });
    try {
      await new Promise((resolve) => socket.once("connect", resolve));
      socket.write(framed(message(1, 0)));
      // Once the stream has begun, a second question arrives while it is still being produced.
      const deadline = Date.now() + GUARD_MS;
      while (!production?.produced || asked.at(-1) !== 1) {
        assert.ok(Date.now() < deadline, "the stream never began");
        await new Promise((r) => setTimeout(r, 5));
      }
      socket.write(framed(message(3, 0)));
      let received = 0;
      let buf = Buffer.alloc(0);
      await new Promise<void>((resolve, reject) => {
        const guard = setTimeout(() => reject(new Error("no answer to the second question")), GUARD_MS);
        socket.on("data", (d) => {
          buf = Buffer.concat([buf, d]);
          while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
            const tag = buf.readUInt16BE(2);
            buf = buf.subarray(2 + buf.readUInt16BE(0));
            received++;
            if (tag === 3) {
              askedDuring = [...asked];
              clearTimeout(guard);
              resolve();
            }
          }
        });
      });
      assert.equal(received, count + 1, "every streamed message came before the second answer");
      assert.deepEqual(askedDuring, [1, 3]);
    } finally {
      socket.destroy();
    }
  });

  it("waits for the client to read, and stops producing when the client goes away", async () => {
    count = 1_000_000; // a gigabyte of answer: far more than any socket buffer holds
    const socket = net.connect({ port, host: "127.0.0.1" });
    try {
      await new Promise((resolve) => socket.once("connect", resolve));
      socket.pause(); // reads nothing
      socket.write(framed(message(1, 0)));
      const deadline = Date.now() + GUARD_MS;
      while (!production?.produced || production.finished) {
        assert.ok(Date.now() < deadline, "the stream never began");
        await new Promise((r) => setTimeout(r, 5));
      }
      socket.destroy();
      while (!production.stopped) {
        assert.ok(Date.now() < deadline, `still producing after the client left (${production.produced} messages)`);
        await new Promise((r) => setTimeout(r, 5));
      }
      assert.ok(production.produced < count, `${production.produced} of ${count} messages produced for a client that read none`);
    } finally {
      socket.destroy();
    }
  });
});
