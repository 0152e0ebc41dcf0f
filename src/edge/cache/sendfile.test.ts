import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { Agent as HttpAgent, createServer, get as httpGet, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { connect, type AddressInfo, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { promisify } from "node:util";
import { Agent, request } from "undici";
import { createLogger } from "../../core/logger.js";
import { eventually } from "../../core/testing/eventually.js";
import { loopbackBlock } from "../testing/origins.js";
import { EdgeCache, type CacheOptions, type FetchOrigin } from "./http-cache.js";
import { loadSendfile, type NativeSendfile } from "./sendfile.js";
import { startScriptedOrigin } from "./testing/origin.js";

/**
 * The sendfile(2) path of big cached bodies (sendfile.ts, native/sendfile.cc): the cache runs in-process (its
 * descriptors and the addon's counters are inspected) behind a real HTTP server, in front of a real origin on
 * loopback, and real clients (curl, undici, node:http, raw sockets) read the answers.
 */
const block = loopbackBlock();
let nextAddress = 1;
const run = promisify(execFile);
const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");
/** Bigger than any loopback socket's buffers together (a client that stops reading really stalls the sender). */
const BIG = 16 * 1024 * 1024;

const loaded = loadSendfile();
/** The addon; the tests of the sendfile path fail without it (a build that could not make it must not pass silently). */
function addon(): NativeSendfile {
  assert.ok("native" in loaded, `the sendfile addon did not load: ${"why" in loaded ? loaded.why : ""}`);
  return loaded.native;
}

/**
 * Transfers the addon has finished, read once none is running. A client has the last byte of a body before the
 * transfer is counted: the count goes up once the addon's handles are closed, a turn of the event loop or more
 * later, so a read right after the client's answer may miss the last one.
 */
async function finishedTransfers(native: NativeSendfile): Promise<number> {
  await eventually(() => native.stats().active === 0, "every sendfile transfer ended");
  return native.stats().finished;
}

async function cacheInFront(t: TestContext, options: Partial<Omit<CacheOptions, "dir">> = {}, tls?: { key: string; cert: string }) {
  const address = block(nextAddress++);
  const origin = await startScriptedOrigin(t, address);
  const dir = mkdtempSync(join(tmpdir(), "edge-cache-sendfile-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const zoneSettings = { developmentMode: () => false, cacheLevel: () => "aggressive", browserCacheTtl: () => 14400 };
  const cache = new EdgeCache({ dir, maxBytes: 200_000_000, maxObjectBytes: 100_000_000, ...options }, zoneSettings, createLogger({ level: "silent" }));
  t.after(() => cache.close());
  /** Bytes each answer added to its connection's bytesWritten (what the dispatch's metrics count), in order. */
  const counted: number[] = [];
  const listener = (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket;
    const before = socket.bytesWritten;
    res.once("close", () => counted.push(socket.bytesWritten - before));
    const fetchOrigin: FetchOrigin = async (o) => {
      const headers: Record<string, string> = {};
      for (const [name, value] of o.set) headers[name] = value;
      const answer = await request(`http://${address}${req.url}`, { headers });
      return { status: answer.statusCode, headers: answer.headers as Record<string, string>, body: answer.body };
    };
    const taken = cache.handle(req, res, { zoneId: "z1", host: "www.sendfile.example", path: req.url ?? "/", scheme: "http", ray: "ray-1" }, fetchOrigin);
    if (!taken) res.writeHead(200).end("forwarded");
  };
  const front: Server = tls ? createHttpsServer(tls, listener) : createServer(listener);
  await new Promise<void>((resolve) => front.listen(0, "127.0.0.1", resolve));
  t.after(() => {
    front.closeAllConnections();
    return new Promise((resolve) => front.close(resolve));
  });
  const port = (front.address() as AddressInfo).port;
  const base = `${tls ? "https" : "http"}://127.0.0.1:${port}`;
  const dispatcher = tls ? new Agent({ connect: { rejectUnauthorized: false } }) : undefined;
  t.after(() => dispatcher?.close());
  const get = async (path: string, headers: Record<string, string> = {}, method: "GET" | "HEAD" = "GET") => {
    const res = await request(`${base}${path}`, { headers, method, dispatcher });
    return { status: res.statusCode, headers: res.headers, body: Buffer.from(await res.body.arrayBuffer()) };
  };
  /** Descriptors of this process open on a cached body's file. */
  const bodyFds = () =>
    readdirSync("/proc/self/fd").filter((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`).startsWith(join(dir, "objects"));
      } catch {
        return false;
      }
    }).length;
  const bodyFiles = () => readdirSync(join(dir, "objects")).flatMap((sub) => readdirSync(join(dir, "objects", sub)));
  return { cache, origin, get, port, base, counted, bodyFds, bodyFiles };
}

/** An origin route answering `body` (cacheable for a minute). */
function serveBody(body: Buffer, etag = '"v1"') {
  return (_req: IncomingMessage, res: ServerResponse) =>
    res.writeHead(200, { "cache-control": "max-age=60", "content-type": "application/octet-stream", "content-length": String(body.length), etag }).end(body);
}

const openFds = () => readdirSync("/proc/self/fd").length;

/** A client on a raw socket: writes requests as given and parses the answers (Content-Length framed) itself. */
class RawClient {
  private chunks: Buffer[] = [];
  private total = 0;
  closed = false;
  private notify: (() => void) | undefined;
  constructor(readonly socket: Socket) {
    socket.on("data", (d: Buffer) => {
      this.chunks.push(d);
      this.total += d.length;
      this.wake();
    });
    socket.on("close", () => {
      this.closed = true;
      this.wake();
    });
    socket.on("error", () => undefined);
  }
  static async open(port: number): Promise<RawClient> {
    const socket = connect(port, "127.0.0.1");
    await new Promise<void>((resolve, reject) => socket.once("connect", resolve).once("error", reject));
    return new RawClient(socket);
  }
  /** Bytes received and not yet taken by response(). */
  get received(): number {
    return this.total;
  }
  private wake() {
    const n = this.notify;
    this.notify = undefined;
    n?.();
  }
  private async until(ready: () => boolean): Promise<void> {
    while (!ready()) {
      if (this.closed) throw new Error(`the connection closed (${this.total} bytes unread)`);
      await new Promise<void>((resolve) => (this.notify = resolve));
    }
  }
  private flat(): Buffer {
    if (this.chunks.length !== 1) this.chunks = [Buffer.concat(this.chunks)];
    return this.chunks[0] ?? Buffer.alloc(0);
  }
  send(path: string, extra = ""): void {
    this.socket.write(`GET ${path} HTTP/1.1\r\nHost: www.sendfile.example\r\n${extra}\r\n`);
  }
  async response(): Promise<{ status: number; headers: Record<string, string>; body: Buffer }> {
    let headEnd = -1;
    await this.until(() => this.total > 0 && (headEnd = this.flat().indexOf("\r\n\r\n")) >= 0);
    const lines = this.flat().subarray(0, headEnd).toString("latin1").split("\r\n");
    const status = Number(lines[0].split(" ")[1]);
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) headers[line.slice(0, line.indexOf(":")).toLowerCase()] = line.slice(line.indexOf(":") + 1).trim();
    const length = Number(headers["content-length"]);
    await this.until(() => this.total >= headEnd + 4 + length);
    const all = this.flat();
    const body = Buffer.from(all.subarray(headEnd + 4, headEnd + 4 + length));
    this.chunks = [all.subarray(headEnd + 4 + length)];
    this.total = this.chunks[0].length;
    return { status, headers, body };
  }
}

test("a big HIT is sent with sendfile, whole and as a Range, byte-exact to curl and Node clients, and counted", async (t) => {
  const native = addon();
  const { origin, get, base, counted } = await cacheInFront(t);
  const body = randomBytes(BIG);
  origin.route("/big.bin", serveBody(body));
  const miss = await get("/big.bin");
  assert.equal(miss.headers["cf-cache-status"], "MISS");
  assert.equal(sha(miss.body), sha(body));
  const before = native.stats();

  const hit = await get("/big.bin");
  assert.equal(hit.headers["cf-cache-status"], "HIT");
  assert.equal(hit.headers["content-length"], String(BIG));
  assert.equal(hit.headers["transfer-encoding"], undefined, "no chunked framing around the file's bytes");
  assert.equal(sha(hit.body), sha(body), "undici: the whole body");
  const range = await get("/big.bin", { range: "bytes=1000-9999999" });
  assert.equal(range.status, 206);
  assert.equal(range.headers["content-range"], `bytes 1000-9999999/${BIG}`);
  assert.equal(sha(range.body), sha(body.subarray(1000, 10_000_000)), "undici: the range");
  const suffix = await get("/big.bin", { range: "bytes=-70000" });
  assert.equal(sha(suffix.body), sha(body.subarray(BIG - 70_000)), "undici: a suffix range");

  const out = join(mkdtempSync(join(tmpdir(), "edge-sendfile-curl-")), "out");
  t.after(() => rmSync(join(out, ".."), { recursive: true, force: true }));
  const whole = await run("curl", ["-s", "-D", "-", "-o", out, `${base}/big.bin`]);
  assert.match(whole.stdout, /cf-cache-status: HIT/i);
  assert.equal(sha(readFileSync(out)), sha(body), "curl: the whole body");
  const ranged = await run("curl", ["-s", "-D", "-", "-o", out, "-r", "65537-3000000", `${base}/big.bin`]);
  assert.match(ranged.stdout, /^HTTP\/1.1 206/);
  assert.equal(sha(readFileSync(out)), sha(body.subarray(65_537, 3_000_001)), "curl: the range");

  await eventually(() => counted.length === 6, "every answer counted");
  const after = native.stats();
  assert.equal(after.finished - before.finished, 5, "five answers went through the addon");
  assert.ok(after.workItems > before.workItems);
  assert.equal(after.active, 0);
  // The dispatch's metrics count an answer's bytes from the connection's bytesWritten: the body is in it.
  for (const [i, size] of [BIG, 9_999_000, 70_000, BIG, 2_934_464].entries())
    assert.ok(counted[i + 1] > size, `answer ${i + 2} counted ${counted[i + 1]} bytes, more than its body's ${size}`);
});

test("keep-alive goes on after a sendfile answer, and a pipelined request waits for it", async (t) => {
  const native = addon();
  const { origin, get, port } = await cacheInFront(t);
  const body = randomBytes(BIG);
  origin.route("/big.bin", serveBody(body));
  origin.route("/small.js", serveBody(Buffer.from("small"), '"s"'));
  await get("/big.bin");
  await get("/small.js");
  const before = await finishedTransfers(native);

  // node:http, one kept-alive connection: the second request goes on the socket the first answer was sent on.
  const agent = new HttpAgent({ keepAlive: true, maxSockets: 1 });
  t.after(() => agent.destroy());
  const fetchOnAgent = () =>
    new Promise<{ body: Buffer; reused: boolean; status?: string }>((resolve, reject) => {
      const req = httpGet({ port, host: "127.0.0.1", path: "/big.bin", agent, headers: { host: "www.sendfile.example" } }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (d: Buffer) => chunks.push(d));
        res.on("end", () => resolve({ body: Buffer.concat(chunks), reused: req.reusedSocket, status: res.headers["cf-cache-status"] as string }));
        res.on("error", reject);
      });
      req.on("error", reject);
    });
  const first = await fetchOnAgent();
  const second = await fetchOnAgent();
  assert.equal(first.status, "HIT");
  assert.equal(sha(first.body), sha(body));
  assert.equal(sha(second.body), sha(body));
  assert.equal(second.reused, true, "the second request went on the same connection");

  // Pipelined: both requests written at once; the second answer comes whole after the first's last byte.
  const raw = await RawClient.open(port);
  t.after(() => raw.socket.destroy());
  raw.send("/big.bin");
  raw.send("/small.js");
  raw.send("/big.bin", "Range: bytes=5-100004\r\n");
  const a = await raw.response();
  const b = await raw.response();
  const c = await raw.response();
  assert.equal(a.status, 200);
  assert.equal(sha(a.body), sha(body));
  assert.equal(b.body.toString(), "small");
  assert.equal(c.status, 206);
  assert.equal(sha(c.body), sha(body.subarray(5, 100_005)));
  // The agent's two and the first pipelined answer; the third is Node's to buffer when its turn had not come (a
  // pipelined answer waiting behind another is never sent with sendfile), else the addon's.
  const sent = (await finishedTransfers(native)) - before;
  assert.ok(sent === 3 || sent === 4, `${sent} answers through the addon`);
});

test("a client that goes away mid-transfer leaves no descriptor and no work behind", async (t) => {
  const native = addon();
  const { origin, get, port, bodyFds } = await cacheInFront(t);
  origin.route("/big.bin", serveBody(randomBytes(BIG)));
  await get("/big.bin");
  const baseline = openFds();
  for (const how of ["close", "reset"] as const) {
    const raw = await RawClient.open(port);
    raw.send("/big.bin");
    await eventually(() => raw.received > 1024 * 1024, "the body started");
    if (how === "reset") raw.socket.resetAndDestroy();
    else raw.socket.destroy();
    await eventually(() => native.stats().active === 0, `the transfer ended after the client's ${how}`);
    await eventually(() => openFds() <= baseline && bodyFds() === 0, `no descriptor left after the client's ${how} (now ${openFds()}, before ${baseline})`);
  }
  assert.equal(native.stats().running + native.stats().queued, 0);
  // The cache still answers.
  assert.equal((await get("/big.bin")).headers["cf-cache-status"], "HIT");
});

test("a client that stops reading holds no pool thread, stalls no one, and gets every byte when it reads again", async (t) => {
  const native = addon();
  const { origin, get, port } = await cacheInFront(t);
  const body = randomBytes(BIG);
  origin.route("/big.bin", serveBody(body));
  origin.route("/small.js", serveBody(Buffer.from("small"), '"s"'));
  await get("/big.bin");
  await get("/small.js");
  // More stalled clients than the pool has threads: were a stalled transfer holding one, fs work would wait.
  const slow: RawClient[] = [];
  for (let i = 0; i < 6; i++) {
    const raw = await RawClient.open(port);
    t.after(() => raw.socket.destroy());
    raw.socket.pause();
    raw.send("/big.bin");
    slow.push(raw);
  }
  await eventually(() => {
    const s = native.stats();
    return s.active === 6 && s.running === 0 && s.queued === 0;
  }, "six transfers waiting on their clients, none on a pool thread");
  assert.equal(native.stats().maxRunning, Math.max(1, Math.floor((Number(process.env.UV_THREADPOOL_SIZE) || 4) / 2)));
  // Meanwhile: fs work, small and big HITs are answered (and while they run, no more than maxRunning work items).
  let most = 0;
  const sampler = setInterval(() => (most = Math.max(most, native.stats().running)), 1);
  try {
    assert.ok((await readFile(new URL(import.meta.url))).length > 0);
    const others = await Promise.all([get("/big.bin"), get("/big.bin"), get("/big.bin"), get("/small.js")]);
    for (const o of others.slice(0, 3)) assert.equal(sha(o.body), sha(body));
    assert.equal(others[3].body.toString(), "small");
  } finally {
    clearInterval(sampler);
  }
  assert.ok(most <= native.stats().maxRunning, `at most maxRunning work items ran at once (saw ${most})`);
  for (const raw of slow) raw.socket.resume();
  for (const raw of slow) assert.equal(sha((await raw.response()).body), sha(body), "the stalled client's body, whole");
});

test("a client that reads nothing for the idle bound is cut, and its descriptors closed", async (t) => {
  const native = addon();
  const { origin, get, port, bodyFds } = await cacheInFront(t, { sendfileIdleMs: 300 });
  origin.route("/big.bin", serveBody(randomBytes(BIG)));
  await get("/big.bin");
  const baseline = openFds();
  const raw = await RawClient.open(port);
  raw.socket.pause();
  raw.send("/big.bin");
  await eventually(() => native.stats().active === 1, "the transfer started");
  await eventually(() => native.stats().active === 0 && bodyFds() === 0, "the idle transfer was ended");
  raw.socket.resume();
  await assert.rejects(raw.response(), /connection closed/, "the body is cut short, never padded");
  await eventually(() => openFds() <= baseline, "no descriptor left");
});

test("an object purged and filled again while it is being sent: the answer is the old bytes, whole", async (t) => {
  addon();
  const { cache, origin, get, port, bodyFiles } = await cacheInFront(t);
  const v1 = randomBytes(BIG);
  const v2 = randomBytes(BIG);
  let current = v1;
  origin.route("/big.bin", (req, res) => serveBody(current, current === v1 ? '"v1"' : '"v2"')(req, res));
  await get("/big.bin");
  const [file] = bodyFiles();
  const raw = await RawClient.open(port);
  t.after(() => raw.socket.destroy());
  raw.socket.pause();
  raw.send("/big.bin");
  await eventually(() => loaded && "native" in loaded && loaded.native.stats().active === 1, "the transfer started");
  cache.purge("z1", { kind: "everything" });
  current = v2;
  const refill = await get("/big.bin");
  assert.equal(refill.headers["cf-cache-status"], "MISS");
  assert.equal(sha(refill.body), sha(v2));
  assert.ok(!bodyFiles().includes(file), "the old file is unlinked");
  assert.equal(sha((await get("/big.bin")).body), sha(v2), "a HIT of the new object");
  raw.socket.resume();
  const old = await raw.response();
  assert.equal(old.headers.etag, '"v1"');
  assert.equal(sha(old.body), sha(v1), "the answer begun before the purge is v1's bytes, whole");
});

test("HEAD, small bodies, TLS and the JavaScript path (sendfile off) are streamed by Node, byte-exact", async (t) => {
  const native = addon();
  const body = randomBytes(4 * 1024 * 1024);
  const check = async (setup: Awaited<ReturnType<typeof cacheInFront>>, what: string) => {
    setup.origin.route("/big.bin", serveBody(body));
    setup.origin.route("/small.css", serveBody(Buffer.from("x".repeat(1000)), '"c"'));
    await setup.get("/big.bin");
    await setup.get("/small.css");
    const before = await finishedTransfers(native);
    const whole = await setup.get("/big.bin");
    assert.equal(whole.headers["cf-cache-status"], "HIT");
    assert.equal(sha(whole.body), sha(body), `${what}: whole`);
    const range = await setup.get("/big.bin", { range: "bytes=100-3000000" });
    assert.equal(sha(range.body), sha(body.subarray(100, 3_000_001)), `${what}: range`);
    return (await finishedTransfers(native)) - before;
  };
  const plain = await cacheInFront(t);
  assert.equal(await check(plain, "plain HTTP"), 2, "plain HTTP goes through the addon");
  const before = await finishedTransfers(native);
  const head = await plain.get("/big.bin", {}, "HEAD");
  assert.equal(head.headers["content-length"], String(body.length));
  assert.equal((await plain.get("/small.css")).body.toString(), "x".repeat(1000));
  assert.equal(await finishedTransfers(native), before, "HEAD and a small body do not");

  assert.equal(await check(await cacheInFront(t, { sendfile: false }), "sendfile off"), 0);
  assert.equal(await check(await cacheInFront(t, { memoryBytes: 0, sendfile: false }), "sendfile and memory tier off"), 0);

  const dir = mkdtempSync(join(tmpdir(), "edge-sendfile-tls-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  await run(
    "openssl",
    ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=localhost", "-days", "1"].concat([
      "-keyout",
      join(dir, "k.pem"),
      "-out",
      join(dir, "c.pem"),
    ]),
  );
  const tls = { key: readFileSync(join(dir, "k.pem"), "utf8"), cert: readFileSync(join(dir, "c.pem"), "utf8") };
  assert.equal(await check(await cacheInFront(t, {}, tls), "TLS"), 0, "TLS is Node's to encrypt");
});
