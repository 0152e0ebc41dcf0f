import assert from "node:assert/strict";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { UserError } from "../../core/errors.js";
import { capnpString } from "./capnp-string.js";
import { relayableHeaders, scriptOfHost } from "./proxy.js";
import { SocketDir } from "./socket-dir.js";
import { defaultWorkerdPath, effectiveCompatibilityDate, probeWorkerd } from "./workerd-binary.js";

test("capnp strings: quotes, backslashes, newlines and non-ASCII cannot escape the literal", () => {
  assert.equal(capnpString("plain"), '"plain"');
  assert.equal(capnpString('a"b\\c\nd'), '"a\\x22b\\x5cc\\x0ad"');
  assert.equal(capnpString("é"), '"\\xc3\\xa9"');
  assert.equal(capnpString('"), x = ("'), '"\\x22), x = (\\x22"');
});

test("the Host names a script only as <label>.<workers domain>", () => {
  assert.equal(scriptOfHost("r2-worker.workers.localhost:8787", "workers.localhost"), "r2-worker");
  assert.equal(scriptOfHost("R2-Worker.Workers.Localhost", "workers.localhost"), "r2-worker");
  assert.equal(scriptOfHost("r2-worker.workers.localhost.", "workers.localhost"), "r2-worker");
  assert.equal(scriptOfHost("workers.localhost", "workers.localhost"), undefined);
  assert.equal(scriptOfHost("a.b.workers.localhost", "workers.localhost"), undefined);
  assert.equal(scriptOfHost("127.0.0.1:8787", "workers.localhost"), undefined);
  assert.equal(scriptOfHost("evilworkers.localhost", "workers.localhost"), undefined);
  assert.equal(scriptOfHost(undefined, "workers.localhost"), undefined);
});

test("a script's answer headers are relayed as a list, without hop-by-hop ones or those its Connection header names", () => {
  const raw = (...kv: string[]) => kv.map((x) => Buffer.from(x, "latin1"));
  const relayed = relayableHeaders(
    raw(
      "Content-Length",
      "5",
      "Set-Cookie",
      "a=1",
      "Connection",
      "keep-alive, X-Private",
      "X-Private",
      "p",
      "set-cookie",
      "b=2",
      "Keep-Alive",
      "timeout=5",
      "X-Name",
      "caf\u00e9",
    ),
  );
  assert.deepEqual(relayed.list, ["content-length", "5", "set-cookie", "a=1", "set-cookie", "b=2", "x-name", "caf\u00e9"]);
  assert.equal(relayed.contentLength, 5);
  const chunked = relayableHeaders(raw("Transfer-Encoding", "chunked", "Content-Type", "text/plain"));
  assert.deepEqual(chunked, { list: ["content-type", "text/plain"], contentLength: -1 });
  // A length the Connection header names is not relayed, so it does not delimit the answer either.
  assert.deepEqual(relayableHeaders(raw("Connection", "content-length", "Content-Length", "5")), { list: [], contentLength: -1 });
});

test("unix sockets go in a private directory under the run directory, or in a private temp one when that path is too long", () => {
  const base = mkdtempSync(join(tmpdir(), "sockdir-"));
  try {
    const short = new SocketDir(join(base, "run"));
    assert.equal(short.path, join(base, "run", "_sockets"));
    const a = short.next("workerd");
    assert.notEqual(short.next("workerd"), a, "every socket path is fresh");
    assert.equal(dirname(a), short.path);
    const long = new SocketDir(join(base, "x".repeat(120)));
    assert.ok(long.path.startsWith(tmpdir()) && !long.path.includes("x".repeat(120)));
    assert.ok(Buffer.byteLength(long.next("workerd")) <= 107);
    for (const d of [short.path, long.path]) assert.equal(statSync(d).mode & 0o077, 0, `${d} is private`);
    long.remove();
    short.remove();
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
});

test("the pinned workerd reports its date; a later compatibility date is lowered to it, an earlier one kept", async () => {
  const binary = await probeWorkerd(defaultWorkerdPath());
  assert.match(binary.newestCompatibilityDate, /^\d{4}-\d{2}-\d{2}$/);
  assert.equal(effectiveCompatibilityDate("2099-01-01", binary), binary.newestCompatibilityDate);
  assert.equal(effectiveCompatibilityDate("2024-09-01", binary), "2024-09-01");
  assert.equal(effectiveCompatibilityDate(binary.newestCompatibilityDate, binary), binary.newestCompatibilityDate);
});

test("a --workerd-binary that is missing or is not workerd is a clear user error", async () => {
  await assert.rejects(
    probeWorkerd("/nonexistent/workerd"),
    (e: Error) => e instanceof UserError && /Could not run workerd at \/nonexistent\/workerd/.test(e.message),
  );
  await assert.rejects(probeWorkerd("/bin/true"), (e: Error) => e instanceof UserError && /does not look like workerd/.test(e.message));
});
