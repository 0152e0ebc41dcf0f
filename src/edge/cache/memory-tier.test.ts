import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, rmSync, truncateSync, unlinkSync } from "node:fs";
import { createServer, type ServerResponse } from "node:http";
import { connect, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { request } from "undici";
import { createLogger } from "../../core/logger.js";
import { loopbackBlock } from "../testing/origins.js";
import { readCacheConfig } from "./config.js";
import { cacheStatusOf, EdgeCache, MEMORY_OBJECT_MAX, type CacheOptions, type FetchOrigin } from "./http-cache.js";
import { startScriptedOrigin } from "./testing/origin.js";

/**
 * The memory tier (--cache-memory-bytes): HITs of small objects answered from memory are the same answers as from
 * disk, and every change of the index reaches it (purge, eviction, expiry, a new fill); its bound holds. The cache
 * runs in-process (its memory is inspected) behind a real HTTP server, in front of a real origin on loopback.
 */
const block = loopbackBlock();
let nextAddress = 1;

async function cacheInFront(t: TestContext, options: Omit<CacheOptions, "dir">) {
  const address = block(nextAddress++);
  const origin = await startScriptedOrigin(t, address);
  const dir = mkdtempSync(join(tmpdir(), "edge-cache-memory-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const zoneSettings = { developmentMode: () => false, cacheLevel: () => "aggressive", browserCacheTtl: () => 14400 };
  const cache = new EdgeCache({ dir, ...options }, zoneSettings, createLogger({ level: "silent" }));
  t.after(() => cache.close());
  /** The cache status each answer was counted with (what the dispatch's metrics read), in order. */
  const counted: (string | undefined)[] = [];
  let rays = 0;
  const front = createServer((req, res: ServerResponse) => {
    const fetchOrigin: FetchOrigin = async (o) => {
      const headers: Record<string, string> = {};
      for (const [name, value] of o.set) headers[name] = value;
      const answer = await request(`http://${address}${req.url}`, { headers });
      return { status: answer.statusCode, headers: answer.headers as Record<string, string>, body: answer.body };
    };
    res.once("close", () => counted.push(cacheStatusOf(res)));
    const taken = cache.handle(req, res, { zoneId: "z1", host: "www.memory.example", path: req.url ?? "/", scheme: "http", ray: `ray-${++rays}` }, fetchOrigin);
    if (!taken) res.writeHead(200).end("forwarded");
  });
  await new Promise<void>((resolve) => front.listen(0, "127.0.0.1", resolve));
  t.after(() => new Promise((resolve) => front.close(resolve)));
  const port = (front.address() as AddressInfo).port;
  const get = async (path: string, headers: Record<string, string> = {}) => {
    const res = await request(`http://127.0.0.1:${port}${path}`, { headers });
    return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
  };
  const bodyFiles = () => readdirSync(join(dir, "objects")).flatMap((sub) => readdirSync(join(dir, "objects", sub)).map((f) => join(dir, "objects", sub, f)));
  return { cache, origin, get, counted, bodyFiles, port };
}

test("a HIT from memory is the answer a HIT from disk is, and is counted as a HIT", async (t) => {
  const { cache, origin, get, counted, bodyFiles } = await cacheInFront(t, { maxBytes: 10_000_000, maxObjectBytes: 1_000_000 });
  origin.route("/app.js", (_req, res) =>
    res.writeHead(200, { "cache-control": "max-age=60", etag: '"v1"', "x-origin": "yes", "content-length": "5", "accept-ranges": "none" }).end("hello"),
  );
  assert.equal((await get("/app.js")).headers["cf-cache-status"], "MISS");
  const fromDisk = await get("/app.js");
  assert.equal(fromDisk.headers["cf-cache-status"], "HIT");
  assert.equal(cache.memoryStats().bodies, 1, "the first HIT read the file and kept the small body");
  // The file goes: only memory can answer now.
  for (const f of bodyFiles()) unlinkSync(f);
  const fromMemory = await get("/app.js");
  assert.equal(fromMemory.text, "hello");
  for (const h of ["cf-cache-status", "etag", "x-origin", "content-length", "accept-ranges", "cache-control"])
    assert.equal(fromMemory.headers[h], fromDisk.headers[h], `${h} as from disk`);
  // The same fields, each sent once (a HIT from memory writes a head it precomputed when the entry was made).
  assert.deepEqual(Object.keys(fromMemory.headers).sort(), Object.keys(fromDisk.headers).sort());
  for (const [name, value] of Object.entries(fromMemory.headers)) assert.equal(typeof value, "string", `${name} sent once`);
  // One head list per entry is filled in for each HIT: every answer has its own ray, and nothing of another's.
  const again = await get("/app.js");
  assert.match(String(fromMemory.headers["cf-ray"]), /^ray-\d+$/);
  assert.notEqual(again.headers["cf-ray"], fromMemory.headers["cf-ray"]);
  assert.equal(again.headers["cache-control"], "max-age=14400");
  assert.equal(again.text, "hello");
  assert.equal(fromMemory.headers["accept-ranges"], "bytes");
  assert.equal(fromMemory.headers["cache-control"], "max-age=14400", "the zone's Browser Cache TTL, as from disk");
  assert.ok(Number(fromMemory.headers.age) >= 0);
  // Conditionals, Range and HEAD are still answered from the cache (the general path, with the body in memory).
  assert.equal((await get("/app.js", { "if-none-match": '"v1"' })).status, 304);
  const range = await get("/app.js", { range: "bytes=1-2" });
  assert.equal(range.status, 206);
  assert.equal(range.text, "el");
  assert.deepEqual(counted, ["MISS", "HIT", "HIT", "HIT", "HIT", "HIT"]);
  assert.equal(origin.count("/app.js"), 1);
});

test("a small body cut short after its file was opened is never answered: the object goes and the origin answers", async (t) => {
  const { cache, origin, get, bodyFiles } = await cacheInFront(t, { maxBytes: 10_000_000, maxObjectBytes: 1_000_000 });
  origin.route("/short.js", (_req, res) => res.writeHead(200, { "cache-control": "max-age=60", "content-length": "5" }).end("hello"));
  assert.equal((await get("/short.js")).headers["cf-cache-status"], "MISS");
  // The first HIT reads the file into memory. Between its open (which checks the size) and its read, the file is
  // truncated (a disk error or a process outside the platform could do it): a real file, cut for real.
  const files = (cache as unknown as { files: { open: (file: string, size: number) => Promise<unknown> } }).files;
  const open = files.open.bind(files);
  files.open = async (file, size) => {
    const handle = await open(file, size);
    for (const f of bodyFiles()) truncateSync(f, 2);
    return handle;
  };
  const answer = await get("/short.js");
  assert.equal(answer.text, "hello", "never the buffer's unread bytes");
  assert.equal(answer.headers["cf-cache-status"], "MISS", "the short object went; the origin answered again");
  assert.equal(cache.memoryStats().bodies, 0, "nothing of the short read was kept in memory");
});

test("a HIT from memory of a request with a body: the body is read past and the connection serves the next request", async (t) => {
  const { origin, get, counted, port } = await cacheInFront(t, { maxBytes: 10_000_000, maxObjectBytes: 1_000_000 });
  origin.route("/app.js", (_req, res) => res.writeHead(200, { "cache-control": "max-age=60", "content-length": "5" }).end("hello"));
  await get("/app.js");
  await get("/app.js"); // from disk; the body is kept in memory
  // A GET with a 5,000-byte body, its body sent in pieces after the answer came, then a second GET on the same
  // connection: the HIT from memory answers in the turn its head arrives (nothing reads the body), so the body must
  // still be read past (else its bytes would be taken for the next request's head) and the connection go on.
  const socket = connect(port, "127.0.0.1");
  t.after(() => socket.destroy());
  let received = "";
  socket.setEncoding("latin1");
  socket.on("data", (d: string) => (received += d));
  const answers = () => received.split("HTTP/1.1 ").length - 1;
  const until = async (n: number, what: string) => {
    for (let i = 0; i < 200 && answers() < n && !socket.destroyed; i++) await sleep(25);
    assert.ok(answers() >= n, `${what}: ${JSON.stringify(received.slice(0, 2000))}`);
  };
  await new Promise<void>((resolve) => socket.once("connect", resolve));
  socket.write("GET /app.js HTTP/1.1\r\nHost: www.memory.example\r\nContent-Length: 5000\r\n\r\n" + "x".repeat(1000));
  await until(1, "the HIT answered before its request's body had come");
  for (let i = 0; i < 4; i++) {
    await sleep(20);
    socket.write("GET / HTTP/1.1\r\n".padEnd(1000, "y").slice(0, 1000));
  }
  socket.write("GET /app.js HTTP/1.1\r\nHost: www.memory.example\r\n\r\n");
  await until(2, "the second request on the connection answered");
  const [first, second] = received.split("HTTP/1.1 ").slice(1);
  assert.match(first, /^200 /);
  assert.match(first, /cf-cache-status: HIT/i);
  assert.match(second, /^200 /, "the body's bytes were not read as a request");
  assert.match(second, /cf-cache-status: HIT/i);
  assert.ok(second.endsWith("\r\n\r\nhello"));
  assert.equal(answers(), 2);
  assert.deepEqual(counted.slice(2), ["HIT", "HIT"]);
  assert.equal(origin.count("/app.js"), 1);
});

test("purges, expiry, a new fill and eviction reach the memory tier", async (t) => {
  const { cache, origin, get } = await cacheInFront(t, { maxBytes: 2_500, maxObjectBytes: 2_500 });
  let version = 1;
  origin.route("/tagged.js", (_req, res) => res.writeHead(200, { "cache-tag": "t1", "cache-control": "max-age=60" }).end(`tagged ${version}`));
  origin.route("/short.js", (_req, res) => res.writeHead(200, { "cache-control": "max-age=1" }).end(`short ${version}`));
  const warm = async (path: string) => {
    await get(path);
    assert.equal((await get(path)).headers["cf-cache-status"], "HIT");
  };

  await warm("/tagged.js");
  assert.equal(cache.memoryStats().bodies, 1);
  version = 2;
  cache.purge("z1", { kind: "tags", tags: ["t1"] });
  assert.equal(cache.memoryStats().entries, 0, "a purge by tag drops the memory copy");
  const afterTag = await get("/tagged.js");
  assert.equal(afterTag.headers["cf-cache-status"], "MISS");
  assert.equal(afterTag.text, "tagged 2");
  await warm("/tagged.js");
  version = 3;
  cache.purge("z1", { kind: "urls", urls: ["http://www.memory.example/tagged.js"] });
  assert.equal((await get("/tagged.js")).text, "tagged 3", "a purge by URL too");

  await warm("/short.js");
  await sleep(1_100);
  version = 4;
  const expired = await get("/short.js");
  assert.equal(expired.headers["cf-cache-status"], "EXPIRED", "an expired object in memory is not a HIT");
  assert.equal(expired.text, "short 4");
  assert.equal((await get("/short.js")).text, "short 4", "the new fill replaced the memory copy");

  // Eviction: objects of 1,000 bytes in a cache of 2,500; the least recently used go, from disk and memory.
  for (const name of ["a", "b", "c"])
    origin.route(`/${name}.css`, (_req, res) => res.writeHead(200, { "cache-control": "max-age=60" }).end(name.repeat(1_000)));
  await warm("/a.css");
  await sleep(5);
  await warm("/b.css");
  await sleep(5);
  await warm("/c.css");
  const a = await get("/a.css");
  assert.equal(a.headers["cf-cache-status"], "MISS", "evicted for the later ones: not answered from memory either");
  assert.equal(a.text, "a".repeat(1_000));
});

test("HITs from memory keep the least-recently-used order on disk: an object asked for again outlives one asked for earlier", async (t) => {
  const { origin, get } = await cacheInFront(t, { maxBytes: 2_500, maxObjectBytes: 2_500 });
  for (const name of ["a", "b", "c"])
    origin.route(`/${name}.css`, (_req, res) => res.writeHead(200, { "cache-control": "max-age=60" }).end(name.repeat(1_000)));
  await get("/a.css");
  // A run of HITs from memory: the access is written down once a millisecond, the last one counts.
  for (let i = 0; i < 20; i++) assert.equal((await get("/a.css")).headers["cf-cache-status"], "HIT");
  await sleep(5);
  await get("/b.css");
  assert.equal((await get("/b.css")).headers["cf-cache-status"], "HIT");
  await sleep(5);
  // a, HIT from memory again, is now more recently used than b.
  assert.equal((await get("/a.css")).headers["cf-cache-status"], "HIT");
  await sleep(5);
  await get("/c.css"); // over the 2,500 bytes: the least recently used goes
  const a = await get("/a.css");
  assert.equal(a.headers["cf-cache-status"], "HIT", "a was used after b: kept");
  assert.equal(a.text, "a".repeat(1_000));
  assert.equal((await get("/b.css")).headers["cf-cache-status"], "MISS", "b: evicted for c");
});

test("--cache-memory-bytes bounds the memory tier; 0 keeps nothing in memory and HITs come from disk", async (t) => {
  const bound = 40_000;
  const { cache, origin, get } = await cacheInFront(t, { maxBytes: 10_000_000, maxObjectBytes: 1_000_000, memoryBytes: bound });
  for (let i = 0; i < 30; i++)
    origin.route(`/o${i}.js`, (_req, res) => res.writeHead(200, { "cache-control": "max-age=60" }).end(String(i).repeat(4_000).slice(0, 4_000)));
  origin.route("/large.js", (_req, res) => res.end("L".repeat(MEMORY_OBJECT_MAX + 1)));
  for (let i = 0; i < 30; i++) {
    await get(`/o${i}.js`);
    const hit = await get(`/o${i}.js`);
    assert.equal(hit.headers["cf-cache-status"], "HIT");
    assert.ok(cache.memoryStats().bytes <= bound, `within the bound after ${i + 1} objects: ${JSON.stringify(cache.memoryStats())}`);
  }
  const held = cache.memoryStats();
  assert.ok(held.bodies >= 5 && held.bodies < 30, `the most recent ones, not all: ${JSON.stringify(held)}`);
  assert.equal((await get("/o0.js")).text, "0".repeat(4_000), "an object out of memory is a HIT from disk");
  await get("/large.js");
  const large = await get("/large.js");
  assert.equal(large.headers["cf-cache-status"], "HIT");
  assert.equal(large.text.length, MEMORY_OBJECT_MAX + 1);
  assert.equal(cache.memoryStats().bodies, held.bodies, "a body over MEMORY_OBJECT_MAX is never kept in memory");

  const off = await cacheInFront(t, { maxBytes: 10_000_000, maxObjectBytes: 1_000_000, memoryBytes: 0 });
  off.origin.route("/x.js", (_req, res) => res.end("x"));
  await off.get("/x.js");
  assert.equal((await off.get("/x.js")).headers["cf-cache-status"], "HIT");
  assert.equal((await off.get("/x.js")).text, "x");
  assert.deepEqual(off.cache.memoryStats(), { entries: 0, bodies: 0, bytes: 0 });
});

test("--cache-memory-bytes must be a whole number of bytes, 0 or more", () => {
  const options = { "cache-dir": undefined, "cache-max-bytes": 1_000, "cache-max-object-bytes": 1_000, "cache-purge-plan": "pro" as const };
  assert.equal(readCacheConfig({ ...options, "cache-memory-bytes": 0 }, "/state").memoryBytes, 0);
  assert.equal(readCacheConfig({ ...options, "cache-memory-bytes": 1_048_576 }, "/state").memoryBytes, 1_048_576);
  for (const bad of [-1, 1.5, Number.NaN, 2 ** 60])
    assert.throws(() => readCacheConfig({ ...options, "cache-memory-bytes": bad }, "/state"), /--cache-memory-bytes/, String(bad));
});
