#!/usr/bin/env node
// Does a large KV bulk write stall the platform? Starts `edgecli serve`, sends N concurrent bulk writes
// (`PUT .../storage/kv/namespaces/{id}/bulk`, default 4 of 10,000 entries and ~98 MB of JSON each), and meanwhile
// asks /healthz every 10 ms. Prints /healthz latency (max, p99) and the platform process's RSS before and at its
// peak (VmHWM from /proc, which the kernel keeps exactly; the sampled maximum is printed too). Not part of the suite.
//
//   npm run build
//   node bench/kv/bulk-stall.mjs [--writes 4] [--entries 10000] [--value-bytes 9800] [--rounds 1]
//   BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" node bench/kv/bulk-stall.mjs   # options for the platform's node
//
// It prints /healthz latency for 3 s with nothing else running first: on a busy machine that is the noise floor.
// Goal: /healthz within 50 ms while four 98 MB bulk writes run, peak RSS under 400 MB.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, request } from "undici";
import { numberOption } from "../../scripts/lib/options.mjs";
import { newCredentials, startServe } from "../../scripts/lib/serve-process.mjs";

const WRITES = numberOption("writes", 4);
const ENTRIES = numberOption("entries", 10_000);
const VALUE_BYTES = numberOption("value-bytes", 9_800);
const ROUNDS = numberOption("rounds", 1);

/** VmRSS and VmHWM of a process, in MB. */
function memory(pid) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN);
  return { rss: kb("VmRSS") / 1024, hwm: kb("VmHWM") / 1024 };
}

/** One bulk body: `entries` entries whose values are `valueBytes` of printable text, distinct per write. */
function bulkBody(tag) {
  const filler = "abcdefghijklmnopqrstuvwxyz0123456789".repeat(Math.ceil(VALUE_BYTES / 36)).slice(0, VALUE_BYTES - 12);
  const parts = [];
  for (let i = 0; i < ENTRIES; i++) parts.push(JSON.stringify({ key: `${tag}-${i}`, value: `${String(i).padStart(12, "0")}${filler}` }));
  return Buffer.from(`[${parts.join(",")}]`);
}

function summary(latencies) {
  const sorted = [...latencies].sort((a, b) => a - b);
  const pct = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))].toFixed(1);
  return `${sorted.length} requests, max ${pct(1)} ms, p99 ${pct(0.99)} ms, median ${pct(0.5)} ms`;
}

const stateDir = mkdtempSync(join(tmpdir(), "bulk-stall-"));
const creds = newCredentials();
const p = await startServe({
  stateDir,
  creds,
  args: ["--dns-workers", "0"],
  nodeArgs: process.env.BENCH_NODE_ARGS ? process.env.BENCH_NODE_ARGS.split(" ") : [],
});
const pid = p.pid;
try {
  const health = new Agent({ connections: 1 });
  const writers = new Agent({ connections: WRITES, bodyTimeout: 600_000, headersTimeout: 600_000 });
  for (let round = 1; round <= ROUNDS; round++) {
    const namespaces = [];
    for (let w = 0; w < WRITES; w++) {
      const created = await p.api("POST", `/accounts/${creds.accountId}/storage/kv/namespaces`, { title: `bulk-stall-${round}-${w}` });
      namespaces.push(created.body.result.id);
    }
    const bodies = namespaces.map((_, w) => bulkBody(`r${round}w${w}`));
    const before = memory(pid);
    let sampledPeak = before.rss;
    let done = false;
    let latencies = [];
    const healthLoop = (async () => {
      while (!done) {
        const t = performance.now();
        const res = await request(`${p.url}/healthz`, { dispatcher: health });
        await res.body.text();
        latencies.push(performance.now() - t);
        sampledPeak = Math.max(sampledPeak, memory(pid).rss);
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    // The machine's own noise first: /healthz with nothing else running.
    await new Promise((r) => setTimeout(r, 3000));
    const idle = summary(latencies);
    latencies = [];
    const t0 = performance.now();
    const results = await Promise.all(
      namespaces.map(async (ns, w) => {
        const start = performance.now();
        const res = await request(`${p.apiUrl}/accounts/${creds.accountId}/storage/kv/namespaces/${ns}/bulk`, {
          method: "PUT",
          headers: p.headers({ "content-type": "application/json" }),
          body: bodies[w],
          dispatcher: writers,
        });
        const body = await res.body.json();
        return { status: res.statusCode, ms: performance.now() - start, count: body.result?.successful_key_count, error: body.errors?.[0]?.message };
      }),
    );
    const wall = performance.now() - t0;
    // A few more samples after the writes, while their garbage is still around.
    await new Promise((r) => setTimeout(r, 200));
    done = true;
    await healthLoop;
    const after = memory(pid);
    const mb = (bodies[0].length / 1e6).toFixed(1);
    console.log(`round ${round}: ${WRITES} concurrent bulk writes of ${ENTRIES} entries, ${mb} MB each, in ${(wall / 1000).toFixed(2)} s`);
    for (const [w, r] of results.entries()) {
      console.log(
        `  write ${w}: HTTP ${r.status} in ${(r.ms / 1000).toFixed(2)} s${r.count !== undefined ? `, ${r.count} keys` : ""}${r.error ? ` (${r.error})` : ""}`,
      );
    }
    console.log(`  /healthz with nothing else running (3 s): ${idle}`);
    console.log(`  /healthz during the writes: ${summary(latencies)}`);
    console.log(
      `  platform RSS: ${before.rss.toFixed(0)} MB before, sampled peak ${sampledPeak.toFixed(0)} MB, VmHWM ${after.hwm.toFixed(0)} MB, ${after.rss.toFixed(0)} MB after`,
    );
    const sample = await p.api("GET", `/accounts/${creds.accountId}/storage/kv/namespaces/${namespaces[0]}/keys?limit=1`);
    console.log(`  first namespace lists ${sample.body.result?.[0]?.name ?? "nothing"} first`);
  }
  await health.close();
  await writers.close();
} finally {
  await p.stop();
  rmSync(stateDir, { recursive: true, force: true });
}
