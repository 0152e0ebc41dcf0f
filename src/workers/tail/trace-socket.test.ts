import assert from "node:assert/strict";
import type { IncomingMessage } from "node:http";
import { createServer, connect, type Socket } from "node:net";
import { test } from "node:test";
import { TraceSocket } from "./trace-socket.js";

/** A masked client ping of `size` bytes (RFC 6455 §5.2). */
function ping(size: number): Buffer {
  const head = Buffer.from([0x89, 0x80 | 126, size >> 8, size & 0xff, 1, 2, 3, 4]);
  return Buffer.concat([head, Buffer.alloc(size)]);
}

test("a tail client that sends pings and never reads its socket holds a bounded backlog of pongs", async (t) => {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => server.close());
  const accepted = new Promise<Socket>((resolve) => server.once("connection", resolve));
  const client = connect((server.address() as { port: number }).port, "127.0.0.1");
  t.after(() => client.destroy());
  const edge = await accepted;
  const req = { headers: { "sec-websocket-key": Buffer.alloc(16).toString("base64"), "sec-websocket-version": "13" } } as unknown as IncomingMessage;
  TraceSocket.accept(req, edge, Buffer.alloc(0), "trace-v1");

  // The client never reads: every pong the edge writes stays in memory once the kernel's buffers are full.
  client.pause();
  const frame = ping(4000);
  const total = 8_000 * frame.length; // 32 MB of pings
  let sent = 0;
  const sendMore = () => {
    while (sent < total) {
      sent += frame.length;
      if (!client.write(frame)) return void client.once("drain", sendMore);
    }
  };
  sendMore();
  // Until the edge has read every ping, or stopped reading (its writes backed up).
  while (edge.bytesRead < total && !edge.isPaused()) await new Promise((r) => setTimeout(r, 20));
  assert.ok(edge.writableLength <= 1024 * 1024, `${edge.writableLength} bytes of pongs held for a client that does not read`);
});
