import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import * as packet from "dns-packet";
import type { TestPlatform } from "../../core/testing/platform.js";
import { createRecord, createZone, encodeQuery, startDnsPlatform, tcpQuery, udpQuery } from "../testing/helpers.js";

const Z = "tcp-limits.example";
/** Hang guard for waits on the server: generous, since the machine may be busy. */
const GUARD_MS = 20_000;

/** A raw TCP connection to the DNS port, with when and how it ended. */
interface Conn {
  socket: net.Socket;
  /** Resolves once the server has closed or reset it (ms since it was opened), or rejects at the hang guard. */
  closed: Promise<number>;
  received: () => Buffer;
}

async function connect(port: number, localAddress = "127.0.0.1"): Promise<Conn> {
  const socket = net.connect({ port, host: "127.0.0.1", localAddress });
  const opened = Date.now();
  const chunks: Buffer[] = [];
  socket.on("data", (d) => chunks.push(d));
  socket.on("error", () => {});
  const closed = new Promise<number>((resolve, reject) => {
    const guard = setTimeout(() => reject(new Error(`connection from ${localAddress} still open after ${GUARD_MS} ms`)), GUARD_MS);
    socket.on("close", () => {
      clearTimeout(guard);
      resolve(Date.now() - opened);
    });
  });
  closed.catch(() => {});
  // A connection the server resets at once may be reset before this (busy) process even sees it connected:
  // that is a closed connection too, not an error.
  await Promise.race([new Promise((resolve) => socket.once("connect", resolve)), closed]);
  return { socket, closed, received: () => Buffer.concat(chunks) };
}

/** Runs `body` with connections it opens, and closes whatever is left of them however it ends, so one failure does not use up the caps for the next test. */
async function withConnections(port: number, body: (open: (localAddress: string) => Promise<Conn>) => Promise<void>): Promise<void> {
  const opened: Conn[] = [];
  try {
    await body(async (localAddress) => {
      const c = await connect(port, localAddress);
      opened.push(c);
      return c;
    });
  } finally {
    for (const c of opened) c.socket.destroy();
  }
}

function framed(msg: Buffer): Buffer {
  const out = Buffer.alloc(msg.length + 2);
  out.writeUInt16BE(msg.length);
  msg.copy(out, 2);
  return out;
}

/** Resolves true when the connection is closed by the server before `ms` pass (polled; the server decides when). */
const closedWithin = (c: Conn, ms: number) => Promise.race([c.closed.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms))]);

/**
 * Hangs up and waits for the server's side to close too: the server has then forgotten the connection before it
 * accepts another one, so the next test's counts start clean.
 */
async function hangUp(c: Conn): Promise<void> {
  c.socket.end();
  await c.closed;
}

const wwwAnswer = (msgs: packet.Packet[]) => msgs[0]?.answers?.map((a: any) => a.data);

// Tests in order: each starts with no connection open at the server (the caps count every client).
describe("DNS over TCP: connection caps and the per-message deadline", () => {
  let p: TestPlatform;
  let port: number;

  before(async () => {
    ({ p, port } = await startDnsPlatform(["--dns-tcp-message-timeout", "1", "--dns-tcp-max-clients", "6", "--dns-tcp-max-clients-per-address", "3"]));
    const zoneId = await createZone(p, Z);
    await createRecord(p, zoneId, { type: "A", name: "www", content: "198.51.100.5", ttl: 300 });
  });
  after(() => p?.dispose());

  it("resets connections past the total cap; the open ones and UDP are answered meanwhile", () =>
    withConnections(port, async (open) => {
      const held: Conn[] = [];
      for (const a of ["127.0.0.3", "127.0.0.3", "127.0.0.4", "127.0.0.4", "127.0.0.5", "127.0.0.5"]) held.push(await open(a));
      for (const h of held) assert.deepEqual(wwwAnswer(await queryOn(h, encodeQuery(`www.${Z}`, "A"))), ["198.51.100.5"]);
      const extra = await open("127.0.0.6");
      assert.ok(await closedWithin(extra, GUARD_MS), "the seventh connection is closed");
      assert.deepEqual(
        (await udpQuery(port, `www.${Z}`, "A")).answers?.map((a: any) => a.data),
        ["198.51.100.5"],
      );
      await Promise.all(held.map(hangUp));
      assert.deepEqual(wwwAnswer(await tcpQuery(port, encodeQuery(`www.${Z}`, "A"), undefined, "127.0.0.6")), ["198.51.100.5"], "room again");
      assert.match(p.logs(), /dns tcp connection limit reached/);
    }));

  it("resets connections past the per-address cap while other clients are answered", () =>
    withConnections(port, async (open) => {
      const held: Conn[] = [];
      for (let i = 0; i < 3; i++) held.push(await open("127.0.0.13"));
      const extra = await open("127.0.0.13");
      assert.ok(await closedWithin(extra, GUARD_MS), "the fourth connection from 127.0.0.13 is closed");
      assert.deepEqual(wwwAnswer(await tcpQuery(port, encodeQuery(`www.${Z}`, "A"), undefined, "127.0.0.14")), ["198.51.100.5"]);
      for (const h of held) assert.deepEqual(wwwAnswer(await queryOn(h, encodeQuery(`www.${Z}`, "A"))), ["198.51.100.5"]);
      await Promise.all(held.map(hangUp));
      assert.deepEqual(wwwAnswer(await tcpQuery(port, encodeQuery(`www.${Z}`, "A"), undefined, "127.0.0.13")), ["198.51.100.5"], "room again");
    }));

  it("answers transfer requests pipelined on one connection, and logs refusals at most once per interval", () =>
    withConnections(port, async (open) => {
      const logged = () => p.logs().split("zone transfer for unknown zone refused").length - 1;
      const before = logged();
      const c = await open("127.0.0.31");
      c.socket.write(Buffer.concat(Array.from({ length: 50 }, (_, i) => framed(encodeQuery("nosuch.example", "AXFR", { id: i })))));
      const until = Date.now() + GUARD_MS;
      while (countMessages(c.received()) < 50 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      const answers = decodeAll(c.received());
      assert.equal(answers.length, 50);
      assert.ok(
        answers.every((a) => ((a.flags ?? 0) & 0xf) === 9),
        "NOTAUTH for a zone we do not have",
      );
      assert.ok(logged() - before <= 1, `${logged() - before} log lines for 50 refusals`);
      await hangUp(c);
    }));

  it("cuts off a client trickling a message a byte at a time at the message deadline", () =>
    withConnections(port, async (open) => {
      const c = await open("127.0.0.21");
      const msg = framed(encodeQuery(`www.${Z}`, "A"));
      // One byte every 300 ms: the whole message would take about 10 s; the deadline is 1 s after its first byte.
      let sent = 0;
      const trickle = setInterval(() => {
        if (sent < msg.length && !c.socket.destroyed) c.socket.write(msg.subarray(sent, ++sent));
      }, 300);
      try {
        await c.closed;
      } finally {
        clearInterval(trickle);
      }
      // The deadline runs from the first byte: the connection was open until the message had begun.
      assert.ok(sent >= 1 && sent < msg.length, `closed after ${sent} of ${msg.length} bytes, before the message was whole`);
      assert.equal(c.received().length, 0, "nothing answered");
    }));

  it("answers messages that arrive in pieces within the deadline, and keeps the connection for the next", () =>
    withConnections(port, async (open) => {
      const c = await open("127.0.0.22");
      const msg = framed(encodeQuery(`www.${Z}`, "A", { id: 5 }));
      c.socket.write(msg.subarray(0, 1));
      c.socket.write(msg.subarray(1, 9));
      c.socket.write(Buffer.concat([msg.subarray(9), framed(encodeQuery(`www.${Z}`, "A", { id: 6 }))]));
      const until = Date.now() + GUARD_MS;
      while (countMessages(c.received()) < 2 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      const answers = decodeAll(c.received());
      assert.deepEqual(
        answers.map((a) => [a.id, wwwAnswer([a])]),
        [
          [5, ["198.51.100.5"]],
          [6, ["198.51.100.5"]],
        ],
      );
      assert.equal(c.socket.destroyed, false);
      await hangUp(c);
    }));
});

describe("DNS over TCP: idle timeout and connection lifetime", () => {
  let p: TestPlatform;
  let port: number;

  before(async () => {
    ({ p, port } = await startDnsPlatform(["--dns-tcp-idle-timeout", "1", "--dns-tcp-max-lifetime", "3"]));
    const zoneId = await createZone(p, Z);
    await createRecord(p, zoneId, { type: "A", name: "www", content: "198.51.100.5", ttl: 300 });
  });
  after(() => p?.dispose());

  it("closes a silent connection", async () => {
    const c = await connect(port);
    await c.closed;
    assert.equal(c.received().length, 0);
  });

  it("closes a busy connection at its lifetime limit, after answering it", async () => {
    const c = await connect(port);
    let answers = 0;
    let asked = 0;
    // A query every 300 ms: never idle, every message whole at once.
    const busy = setInterval(() => {
      if (!c.socket.destroyed) c.socket.write(framed(encodeQuery(`www.${Z}`, "A", { id: ++asked })));
    }, 300);
    c.socket.on("data", () => (answers = countMessages(c.received())));
    let openMs: number;
    try {
      openMs = await c.closed;
    } finally {
      clearInterval(busy);
    }
    assert.ok(answers >= 1, `answered ${answers} of ${asked} queries before the limit`);
    assert.ok(openMs >= 2900, `closed by the 3 s lifetime, not before (${openMs} ms)`);
  });
});

/** Sends one query on an open connection and returns its answer. */
async function queryOn(c: Conn, msg: Buffer): Promise<packet.Packet[]> {
  const before = c.received().length;
  c.socket.write(framed(msg));
  const until = Date.now() + GUARD_MS;
  while (countMessages(c.received().subarray(before)) < 1 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  return decodeAll(c.received().subarray(before));
}

/** The whole length-prefixed messages at the start of a TCP byte stream. */
function frames(b: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at + 2 <= b.length && at + 2 + b.readUInt16BE(at) <= b.length; at += 2 + b.readUInt16BE(at))
    out.push(b.subarray(at + 2, at + 2 + b.readUInt16BE(at)));
  return out;
}
const countMessages = (b: Buffer) => frames(b).length;
const decodeAll = (b: Buffer) => frames(b).map((m) => packet.decode(m));
