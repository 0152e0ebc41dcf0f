#!/usr/bin/env node
// The longest event-loop stall of `edgecli serve` while it imports a zone file of --records records (10,000: the most
// one import takes) through POST /zones/{id}/dns_records/import, measured in the server by loop-monitor.mjs
// (perf_hooks.monitorEventLoopDelay, 10 ms resolution, one line per 100 ms), with a UDP query to another zone every
// 20 ms meanwhile (its longest wait for an answer), and the longest GC pause (a stall the import's garbage causes
// but no code of ours can cut in parts). --rounds imports, each into a new zone.
// Usage: npm run build && node bench/dns/import-stall.mjs [--records 10000] [--rounds 3] [--dist DIR] [--cpu-prof DIR]
// --dist: another build's dist directory (a "before" number: the same script against main's build).
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { loopSamples, udpProbe } from "./stall-probes.mjs";

const args = process.argv.slice(2);
const arg = (name, def) => (args.includes(`--${name}`) ? args[args.indexOf(`--${name}`) + 1] : def);
const RECORDS = Number(arg("records", 10_000));
const ROUNDS = Number(arg("rounds", 3));
const DIST = resolve(arg("dist", fileURLToPath(new URL("../../dist", import.meta.url))));
const { startTestPlatform } = await import(pathToFileURL(join(DIST, "core/testing/platform.js")).href);
/** --cpu-prof DIR: a V8 CPU profile of the server, written into DIR when it stops. */
const CPU_PROF = arg("cpu-prof", undefined);
const monitor = fileURLToPath(new URL("./loop-monitor.mjs", import.meta.url));

/** A zone file of `n` records: A records, with an AAAA on every fourth name and a TXT on every eighth. */
function zoneFile(n) {
  const lines = [];
  for (let i = 0; lines.length < n; i++) {
    lines.push(`h${i} 300 IN A 10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255 || 1}`);
    if (i % 4 === 0 && lines.length < n) lines.push(`h${i} 300 IN AAAA 2001:db8:1::${(i & 0xffff).toString(16)}`);
    if (i % 8 === 0 && lines.length < n) lines.push(`h${i} 300 IN TXT "record ${i} of an imported zone"`);
  }
  return lines.join("\n") + "\n";
}

const work = mkdtempSync(join(tmpdir(), "dns-import-bench-"));
// --dns-workers 0: the probe's queries are answered by the main process, whose loop the import holds.
const p = await startTestPlatform({
  args: ["--dns-port", "0", "--dns-workers", "0"],
  stateDir: join(work, "state"),
  nodeArgs: ["--import", monitor, ...(CPU_PROF ? ["--cpu-prof", "--cpu-prof-dir", CPU_PROF] : [])],
});
const port = Number(p.endpoints.dns_udp.split(":").pop());
const out = { dist: DIST, records: RECORDS, loadavg_start: loadavg().map((l) => l.toFixed(2)), rounds: [] };
const pr = udpProbe(port, "www.probe.example");
try {
  const probeZone = await p.api("POST", "/zones", { name: "probe.example", account: { id: p.accountId } });
  await p.api("POST", `/zones/${probeZone.body.result.id}/dns_records`, { type: "A", name: "www", content: "192.0.2.1" });
  const file = zoneFile(RECORDS);
  for (let round = 0; round < ROUNDS; round++) {
    const zone = await p.api("POST", "/zones", { name: `import${round}.example`, account: { id: p.accountId } });
    await new Promise((r) => setTimeout(r, 500));
    pr.reset();
    const form = new FormData();
    form.append("file", new Blob([file]), "zone.txt");
    const t0 = Date.now();
    const res = await fetch(`${p.apiUrl}/zones/${zone.body.result.id}/dns_records/import`, { method: "POST", headers: p.headers(), body: form });
    const body = await res.json();
    const t1 = Date.now();
    if (!body.success) throw new Error(JSON.stringify(body.errors));
    await new Promise((r) => setTimeout(r, 300));
    const samples = loopSamples(p.output(), t0, t1);
    out.rounds.push({
      recs_added: body.result.recs_added,
      request_ms: t1 - t0,
      max_loop_stall_ms: Math.round(Math.max(...samples.map((s) => s.max_ms))),
      intervals_over_100ms: samples.filter((s) => s.max_ms > 100).length,
      longest_gc_pause_ms: Math.round(Math.max(...samples.map((s) => s.gc_max_ms))),
      peak_heap_mb: Math.round(Math.max(...samples.map((s) => s.heap_mb))),
      probe_worst_wait_ms: pr.read().worst_wait_ms,
    });
  }
  out.loadavg_end = loadavg().map((l) => l.toFixed(2));
  console.log(JSON.stringify(out, null, 2));
} finally {
  pr.stop();
  await p.stop();
  rmSync(work, { recursive: true, force: true });
}
