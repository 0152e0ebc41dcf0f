import assert from "node:assert/strict";
import { closeSync, fstatSync } from "node:fs";
import { createServer } from "node:net";
import { test } from "node:test";
import { duplicateListenFd, requireListenFdSupport, trimFreedMemory } from "./os.js";

test("the OS addon: a listening socket's descriptor duplicated (same socket, a number of its own); freed memory trimmed", async () => {
  requireListenFdSupport();
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  try {
    const fd = (server as unknown as { _handle: { fd: number } })._handle.fd;
    const copy = duplicateListenFd(fd);
    assert.notEqual(copy, fd);
    assert.equal(fstatSync(copy).ino, fstatSync(fd).ino, "the same socket");
    closeSync(copy);
    assert.equal(server.listening, true, "closing the copy leaves the original");
    assert.throws(() => duplicateListenFd(-1), /descriptor/);
  } finally {
    server.close();
  }
  // Big blocks freed, then handed back: no throw, whatever glibc had to give.
  let blocks: Buffer[] | undefined = Array.from({ length: 64 }, () => Buffer.allocUnsafeSlow(256 * 1024));
  assert.equal(blocks.length, 64);
  blocks = undefined;
  trimFreedMemory();
});
