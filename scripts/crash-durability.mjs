#!/usr/bin/env node
// kill -9 durability run (not part of the test suite; a few minutes). Starts `edgecli serve` on a fresh state
// directory, deploys a worker script, and lets concurrent clients write KV values and small KV bulk puts, DNS records
// and R2 objects through the v4 API while the platform is killed with SIGKILL at random moments and started again on
// the same state directory. A write counts as acknowledged when the API answered 2xx. At the end every acknowledged
// write is read back and compared byte for byte, and after every kill the killed platform's workerd processes must be
// gone. Prints, per area, the writes acknowledged and found; exits 1 if any is missing or differs, if any request
// got a 5xx, or if a workerd outlived its platform.
//
//   npm run build
//   node scripts/crash-durability.mjs [--rounds 5] [--clients 3] [--min-seconds 2] [--max-seconds 6] [--seed 1]
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "undici";
import { numberOption } from "./lib/options.mjs";
import { newCredentials, startServe } from "./lib/serve-process.mjs";

const ROUNDS = numberOption("rounds", 5);
const CLIENTS = numberOption("clients", 3);
const MIN_MS = numberOption("min-seconds", 2) * 1000;
const MAX_MS = numberOption("max-seconds", 6) * 1000;
let seed = numberOption("seed", Date.now() % 100_000);
const SEED = seed;
/** A small deterministic generator, so a run can be repeated with --seed. */
const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;

const stateDir = mkdtempSync(join(tmpdir(), "crash-durability-"));
const creds = newCredentials();
const A = creds.accountId;
let platform; // the running platform, undefined while it is down
const stats = { fiveHundreds: [], workerdStrays: 0, kills: 0 };

/** One HTTP call to the running platform; undefined when it is down or the connection broke (not acknowledged). */
async function call(method, path, { body, headers = {}, raw = false } = {}) {
  const p = platform;
  if (!p) return undefined;
  try {
    const res = await request(p.apiUrl + path, { method, headers: p.headers(headers), body, headersTimeout: 30_000, bodyTimeout: 30_000 });
    const bytes = Buffer.from(await res.body.arrayBuffer());
    if (res.statusCode >= 500) stats.fiveHundreds.push(`${method} ${path.split("?")[0]} → ${res.statusCode} ${bytes.toString().slice(0, 200)}`);
    return { status: res.statusCode, bytes, json: raw ? undefined : safeJson(bytes) };
  } catch {
    return undefined;
  }
}
const safeJson = (b) => {
  try {
    return JSON.parse(b.toString());
  } catch {
    return undefined;
  }
};
const json = (body) => ({ body: JSON.stringify(body), headers: { "content-type": "application/json" } });
const sha = (b) => createHash("sha256").update(b).digest("hex");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** What was acknowledged, per area: enough to read each write back. */
const acked = { kv: [], kvBulk: [], dns: [], r2: [] };
/** Large bulk puts (2,000 entries, ~4 MB) by outcome: acknowledged ones must be whole, the others whole or absent. */
const largeBulks = { acked: [], unacked: [] };
const LARGE_BULK = 2_000;

async function kvClient(ns, c, stop) {
  for (let n = 0; !stop.now; n++) {
    if (n % 10 === 9) {
      const entries = Array.from({ length: 20 }, (_, i) => ({ key: `bulk/c${c}/${n}/${i}`, value: `${randomBytes(8).toString("hex")}-${i}` }));
      const r = await call("PUT", `/accounts/${A}/storage/kv/namespaces/${ns}/bulk`, json(entries));
      if (r?.status === 200) acked.kvBulk.push(...entries);
    } else {
      // Now and then a value over 64 KiB, which lives in the content store.
      const value = n % 7 === 3 ? randomBytes(100 * 1024) : Buffer.from(`v-${c}-${n}-${randomBytes(8).toString("hex")}`);
      const key = `kv/c${c}/${n}`;
      const r = await call("PUT", `/accounts/${A}/storage/kv/namespaces/${ns}/values/${encodeURIComponent(key)}`, { body: value });
      if (r?.status === 200) acked.kv.push({ key, sha: sha(value) });
    }
    if (!platform) await sleep(50);
  }
}

async function kvLargeBulkClient(ns, stop) {
  for (let n = 0; !stop.now; n++) {
    if (!platform) {
      await sleep(50);
      continue;
    }
    const prefix = `big/${n}/`;
    const entries = Array.from({ length: LARGE_BULK }, (_, i) => ({ key: `${prefix}${i}`, value: `${i}-${randomBytes(1000).toString("hex")}` }));
    const r = await call("PUT", `/accounts/${A}/storage/kv/namespaces/${ns}/bulk`, json(entries));
    (r?.status === 200 ? largeBulks.acked : largeBulks.unacked).push({ prefix, last: entries[LARGE_BULK - 1] });
  }
}

/** How many keys start with `prefix`, across list pages. */
async function countKeys(ns, prefix) {
  let n = 0;
  let cursor = "";
  do {
    const r = await call("GET", `/accounts/${A}/storage/kv/namespaces/${ns}/keys?prefix=${encodeURIComponent(prefix)}&cursor=${cursor}`);
    n += r.json.result.length;
    cursor = r.json.result_info.cursor;
  } while (cursor);
  return n;
}

async function dnsClient(zone, c, stop) {
  for (let n = 0; !stop.now; n++) {
    const content = `"t-${c}-${n}-${randomBytes(6).toString("hex")}"`;
    const r = await call("POST", `/zones/${zone}/dns_records`, json({ type: "TXT", name: `c${c}-${n}.durable.test`, content, ttl: 3600 }));
    if (r?.status === 200) acked.dns.push({ id: r.json.result.id, content });
    if (!platform) await sleep(50);
  }
}

async function r2Client(bucket, c, stop) {
  for (let n = 0; !stop.now; n++) {
    const body = randomBytes(n % 5 === 4 ? 200 * 1024 : 1024 + Math.floor(random() * 32 * 1024));
    const key = `c${c}/${n}.bin`;
    const r = await call("PUT", `/accounts/${A}/r2/buckets/${bucket}/objects/${key}`, { body, headers: { "content-type": "application/octet-stream" } });
    if (r?.status === 200) acked.r2.push({ key, sha: sha(body) });
    if (!platform) await sleep(50);
  }
}

/** The pids of the workerd processes `pid` started (their parent is the platform). */
function workerdChildren(pid) {
  const out = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === pid && readFileSync(`/proc/${name}/cmdline`, "utf8").includes("workerd")) out.push(Number(name));
    } catch {
      // gone while we looked
    }
  }
  return out;
}

const running = (pid) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return !/^[ZX]$/.test(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0]);
  } catch {
    return false;
  }
};

async function main() {
  console.log(`state directory ${stateDir}, seed ${SEED}, ${ROUNDS} kill -9 rounds, ${CLIENTS} clients per area`);
  platform = await startServe({ stateDir, creds });
  const ns = (await platform.api("POST", `/accounts/${A}/storage/kv/namespaces`, { title: "durable" })).body.result.id;
  const zone = (await platform.api("POST", "/zones", { name: "durable.test", account: { id: A } })).body.result.id;
  await platform.api("POST", `/accounts/${A}/r2/buckets`, { name: "durable" });
  await deployWorker();

  const stop = { now: false };
  const clients = [];
  for (let c = 0; c < CLIENTS; c++) clients.push(kvClient(ns, c, stop), dnsClient(zone, c, stop), r2Client("durable", c, stop));
  clients.push(kvLargeBulkClient(ns, stop));

  for (let round = 1; round <= ROUNDS; round++) {
    await sleep(MIN_MS + random() * (MAX_MS - MIN_MS));
    const killed = platform;
    const workerds = workerdChildren(killed.pid);
    platform = undefined;
    await killed.kill();
    stats.kills++;
    // The kernel ends them with the platform (see src/workers/workerd-leash.ts); give it a moment.
    for (const deadline = Date.now() + 5_000; workerds.some(running) && Date.now() < deadline;) await sleep(20);
    const strays = workerds.filter(running);
    stats.workerdStrays += strays.length;
    console.log(
      `round ${round}: killed pid ${killed.pid} with ${workerds.length} workerd; ${strays.length} left running; acknowledged so far: kv ${acked.kv.length}, kv bulk entries ${acked.kvBulk.length}, large bulks ${largeBulks.acked.length}, dns ${acked.dns.length}, r2 ${acked.r2.length}`,
    );
    platform = await startServe({ stateDir, creds });
  }
  stop.now = true;
  await Promise.all(clients);

  // Read everything back from a platform started once more.
  const found = { kv: 0, kvBulk: 0, dns: 0, r2: 0 };
  const wrong = [];
  for (const w of acked.kv) {
    const r = await call("GET", `/accounts/${A}/storage/kv/namespaces/${ns}/values/${encodeURIComponent(w.key)}`, { raw: true });
    if (r?.status === 200 && sha(r.bytes) === w.sha) found.kv++;
    else wrong.push(`kv ${w.key}: ${r?.status}`);
  }
  for (const e of acked.kvBulk) {
    const r = await call("GET", `/accounts/${A}/storage/kv/namespaces/${ns}/values/${encodeURIComponent(e.key)}`, { raw: true });
    if (r?.status === 200 && r.bytes.toString() === e.value) found.kvBulk++;
    else wrong.push(`kv bulk ${e.key}: ${r?.status}`);
  }
  let largeWhole = 0;
  let largeAbsent = 0;
  for (const b of [...largeBulks.acked, ...largeBulks.unacked]) {
    const n = await countKeys(ns, b.prefix);
    const last = await call("GET", `/accounts/${A}/storage/kv/namespaces/${ns}/values/${encodeURIComponent(b.last.key)}`, { raw: true });
    const whole = n === LARGE_BULK && last?.status === 200 && last.bytes.toString() === b.last.value;
    if (whole) largeWhole++;
    else if (n === 0) largeAbsent++;
    else wrong.push(`large bulk ${b.prefix}: ${n} of ${LARGE_BULK} keys`);
    if (largeBulks.acked.includes(b) && !whole) wrong.push(`large bulk ${b.prefix}: acknowledged but ${n} of ${LARGE_BULK} keys`);
  }
  for (const w of acked.dns) {
    const r = await call("GET", `/zones/${zone}/dns_records/${w.id}`);
    if (r?.status === 200 && r.json.result.content === w.content) found.dns++;
    else wrong.push(`dns ${w.id}: ${r?.status}`);
  }
  for (const w of acked.r2) {
    const r = await call("GET", `/accounts/${A}/r2/buckets/durable/objects/${w.key}`, { raw: true });
    if (r?.status === 200 && sha(r.bytes) === w.sha) found.r2++;
    else wrong.push(`r2 ${w.key}: ${r?.status}`);
  }
  const worker = await request(`${platform.url}/`, { headers: { host: `durable.workers.localhost:${new URL(platform.url).port}` } });
  const workerText = await worker.body.text();
  await platform.stop();

  console.log(`\n${stats.kills} kill -9 rounds; writes acknowledged → found after restart:`);
  console.log(`  KV values        ${acked.kv.length} → ${found.kv}`);
  console.log(`  KV bulk entries  ${acked.kvBulk.length} → ${found.kvBulk} (in ${acked.kvBulk.length / 20} bulk puts of 20)`);
  console.log(
    `  KV large bulk puts (${LARGE_BULK} entries): ${largeBulks.acked.length} acknowledged, ${largeBulks.unacked.length} cut by a kill; after restart ${largeWhole} whole, ${largeAbsent} absent, ${largeBulks.acked.length + largeBulks.unacked.length - largeWhole - largeAbsent} partial`,
  );
  console.log(`  DNS records      ${acked.dns.length} → ${found.dns}`);
  console.log(`  R2 objects       ${acked.r2.length} → ${found.r2}`);
  console.log(`  workerd left running after a kill: ${stats.workerdStrays}`);
  console.log(`  the worker answers after the last restart: ${worker.statusCode === 200 && workerText === "durable" ? "yes" : `no (${worker.statusCode})`}`);
  console.log(`  5xx answers: ${stats.fiveHundreds.length}`);
  for (const line of [...wrong.slice(0, 20), ...stats.fiveHundreds.slice(0, 20)]) console.log(`    ${line}`);
  const ok = wrong.length === 0 && stats.fiveHundreds.length === 0 && stats.workerdStrays === 0 && workerText === "durable";
  rmSync(stateDir, { recursive: true, force: true });
  process.exit(ok ? 0 : 1);
}

async function deployWorker() {
  const form = new FormData();
  form.append("metadata", JSON.stringify({ main_module: "index.js", compatibility_date: "2024-09-01" }));
  form.append("index.js", new Blob(['export default { fetch() { return new Response("durable"); } };'], { type: "application/javascript+module" }), "index.js");
  const encoded = new Response(form);
  const r = await call("PUT", `/accounts/${A}/workers/scripts/durable`, {
    body: Buffer.from(await encoded.arrayBuffer()),
    headers: { "content-type": encoded.headers.get("content-type") },
  });
  if (r?.status !== 200) throw new Error(`could not deploy the worker: ${r?.status} ${r?.bytes}`);
}

main().catch((err) => {
  console.error(err);
  platform?.kill();
  process.exit(1);
});
