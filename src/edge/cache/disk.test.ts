import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { request } from "undici";
import { eventually } from "../../core/testing/eventually.js";
import { startTestPlatform, type TestPlatform } from "../../core/testing/platform.js";
import { loopbackBlock } from "../testing/origins.js";
import { startScriptedOrigin } from "./testing/origin.js";

const HANG_GUARD = { timeout: 300_000 };
const HOST = "www.disk-test.example";

async function proxiedZone(p: TestPlatform, address: string): Promise<string> {
  const zone = (await p.api("POST", "/zones", { name: "disk-test.example", account: { id: p.accountId } })).body.result.id as string;
  const r = await p.api("POST", `/zones/${zone}/dns_records`, { type: "A", name: "www", content: address, proxied: true });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return zone;
}

const get = async (p: TestPlatform, path: string) => {
  const res = await request(`${p.url}${path}`, { headers: { host: HOST } });
  const body = Buffer.from(await res.body.arrayBuffer());
  return { status: res.statusCode, cache: res.headers["cf-cache-status"], body, length: res.headers["content-length"] };
};

test("the index survives a restart, and a kill -9 during a fill never leaves a truncated body", HANG_GUARD, async (t) => {
  const address = loopbackBlock()(1);
  const origin = await startScriptedOrigin(t, address);
  const stateDir = mkdtempSync(join(tmpdir(), "edge-cache-kill-"));
  t.after(() => rmSync(stateDir, { recursive: true, force: true }));
  const args = ["--origin-allow", "127.0.0.0/8"];
  let p = await startTestPlatform({ stateDir, args });
  t.after(() => p.dispose());
  await proxiedZone(p, address);
  origin.route("/keep.js", (_req, res) => res.end("kept across restarts"));
  assert.equal((await get(p, "/keep.js")).cache, "MISS");

  let complete = false;
  const size = 4 * 1024 * 1024;
  origin.route("/kill.bin", (_req, res) => {
    res.writeHead(200, { "content-length": String(size) });
    if (complete) return res.end(Buffer.alloc(size, 99));
    res.write(Buffer.alloc(size / 2, 99));
  });
  const filling = await request(`${p.url}/kill.bin`, { headers: { host: HOST } });
  assert.equal(filling.headers["cf-cache-status"], "MISS");
  let received = 0;
  const reading = (async () => {
    try {
      for await (const chunk of filling.body) received += (chunk as Buffer).length;
    } catch {
      // The connection dies with the platform.
    }
  })();
  await eventually(async () => received >= size / 2, "half the body arrived", 30_000);
  p.process.kill("SIGKILL");
  await reading;
  assert.ok(received < size, "the killed fill's client saw an incomplete answer (its length shows it)");
  await new Promise((resolve) => (p.process.exitCode !== null || p.process.signalCode !== null ? resolve(undefined) : p.process.once("exit", resolve)));

  p = await startTestPlatform({ stateDir, args, credentials: p });
  assert.deepEqual(readdirSync(join(stateDir, "cache", "tmp")), [], "half-filled bodies are gone at start");
  const kept = await get(p, "/keep.js");
  assert.equal(kept.cache, "HIT", "the index survived the kill");
  assert.equal(kept.body.toString(), "kept across restarts");
  complete = true;
  const after = await get(p, "/kill.bin");
  assert.equal(after.cache, "MISS", "the half body was never stored");
  assert.equal(after.body.length, size);
  const hit = await get(p, "/kill.bin");
  assert.equal(hit.cache, "HIT");
  assert.equal(hit.body.length, size);
  assert.equal(origin.count("/kill.bin"), 2);
});

test("--cache-max-bytes: the least recently used go first; an object larger than the cache passes through whole (MISS)", HANG_GUARD, async (t) => {
  const address = loopbackBlock()(1);
  const origin = await startScriptedOrigin(t, address);
  const p = await startTestPlatform({ args: ["--origin-allow", "127.0.0.0/8", "--cache-max-bytes", "1000"] });
  t.after(() => p.dispose());
  await proxiedZone(p, address);
  for (const name of ["a", "b", "c"]) origin.route(`/${name}.css`, (_req, res) => res.end(name.repeat(400)));
  origin.route("/large.css", (_req, res) => res.end("L".repeat(5000)));
  await get(p, "/a.css");
  await get(p, "/b.css");
  assert.equal((await get(p, "/a.css")).cache, "HIT");
  await sleep(5);
  await get(p, "/c.css");
  assert.equal((await get(p, "/a.css")).cache, "HIT", "recently used: kept");
  assert.equal((await get(p, "/b.css")).cache, "MISS", "least recently used: evicted for c");
  for (let i = 0; i < 2; i++) {
    const large = await get(p, "/large.css");
    assert.equal(large.status, 200);
    assert.equal(large.cache, "MISS");
    assert.equal(large.body.toString(), "L".repeat(5000));
  }
});

test("a full disk (a small tmpfs) makes fills pass through whole: MISS, never an error or a truncated body", HANG_GUARD, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "edge-cache-tmpfs-"));
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", dir], { stdio: "pipe" });
  } catch {
    rmSync(dir, { recursive: true, force: true });
    t.skip("cannot mount a tmpfs here (needs root)");
    return;
  }
  t.after(() => {
    try {
      execFileSync("umount", ["-l", dir], { stdio: "pipe" });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  const cacheDir = join(dir, "cache");
  mkdirSync(cacheDir);
  const address = loopbackBlock()(1);
  const origin = await startScriptedOrigin(t, address);
  const p = await startTestPlatform({ args: ["--origin-allow", "127.0.0.0/8", "--cache-dir", cacheDir] });
  t.after(() => p.dispose());
  await proxiedZone(p, address);
  const size = 3 * 1024 * 1024;
  const body = Buffer.alloc(size);
  for (let i = 0; i < size; i++) body[i] = i % 251;
  origin.route("/huge.bin", (_req, res) => {
    res.writeHead(200, { "content-length": String(size) });
    res.end(body);
  });
  origin.route("/small.js", (_req, res) => res.end("fits"));
  const answers = await Promise.all(Array.from({ length: 4 }, () => get(p, "/huge.bin")));
  for (const a of answers) {
    assert.equal(a.status, 200);
    assert.equal(a.cache, "MISS");
    assert.ok(a.body.equals(body), "the whole body, byte for byte");
  }
  const again = await get(p, "/huge.bin");
  assert.ok(again.body.equals(body));
  assert.equal(again.cache, "MISS");
  assert.equal((await get(p, "/small.js")).cache, "MISS");
  assert.equal((await get(p, "/small.js")).cache, "HIT", "the cache still works once the failed fill's space is freed");
});
