#!/usr/bin/env node
// A very large zone transferred into the platform as a secondary, from a Knot primary (TSIG-signed AXFR): how long
// the first transfer and a later whole-zone transfer take, the longest event-loop stall of `edgecli serve` meanwhile
// (perf_hooks.monitorEventLoopDelay in the server, loop-monitor.mjs), its RSS, V8 heap and longest GC pause, and how long DNS queries to another
// zone waited meanwhile (a UDP probe every 20 ms); then the same while the platform serves the zone by AXFR.
// Usage: npm run build && node bench/dns/secondary-transfer.mjs [--records 200000] [--cpu-prof DIR] [--trace-gc --server-output FILE] [--knot-output FILE]
// Needs Debian `knot` (knotd, knsupdate) and `knot-dnsutils`.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { loopSamples, udpProbe } from "./stall-probes.mjs";
import { startTestPlatform } from "../../dist/core/testing/platform.js";
import { freePort, knsupdate, startKnot } from "../../dist/dns/testing/knot.js";
import { requestXfr } from "../../dist/dns/transfers/xfr-client.js";

const args = process.argv.slice(2);
const opt = (name, def) => (args.includes(`--${name}`) ? Number(args[args.indexOf(`--${name}`) + 1]) : def);
const RECORDS = opt("records", 200_000);
const ZONE = "big.example";
const monitor = fileURLToPath(new URL("./loop-monitor.mjs", import.meta.url));
/** --server-output FILE: everything the server printed (its log, the monitor's lines; with --trace-gc, its GC pauses). */
const SERVER_OUTPUT = args.includes("--server-output") ? args[args.indexOf("--server-output") + 1] : undefined;
/** --knot-output FILE: the primary's log (its AXFRs started and finished). */
const KNOT_OUTPUT = args.includes("--knot-output") ? args[args.indexOf("--knot-output") + 1] : undefined;
/** --cpu-prof DIR: a V8 CPU profile of the server, written into DIR when it stops. */
const CPU_PROF = args.includes("--cpu-prof") ? args[args.indexOf("--cpu-prof") + 1] : undefined;

function zoneFile() {
  const lines = [`$ORIGIN ${ZONE}.`, "$TTL 300", `@ SOA ns1 hostmaster 1 3600 600 604800 300`, "@ NS ns1", "ns1 A 192.0.2.53"];
  for (let i = 0; lines.length - 3 < RECORDS; i++) {
    lines.push(`h${i} A 10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
    if (i % 4 === 0) lines.push(`h${i} AAAA 2001:db8::${(i & 0xffff).toString(16)}`);
    if (i % 8 === 0) lines.push(`h${i} TXT "record ${i} of a large zone"`);
  }
  return lines.join("\n") + "\n";
}

async function until(check, ms = 600_000) {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 50));
  }
}

const work = mkdtempSync(join(tmpdir(), "dns-secondary-bench-"));
const secret = randomBytes(32).toString("base64");
const knotPort = await freePort();
const dnsPort = await freePort();
const knot = await startKnot(
  knotPort,
  `key:
  - id: xfr-key
    algorithm: hmac-sha256
    secret: ${secret}
acl:
  - id: xfr
    address: 127.0.0.1
    key: xfr-key
    action: [transfer, update]
zone:
  - domain: ${ZONE}
    acl: xfr
    zonefile-sync: -1
`,
  { [`${ZONE}.zone`]: zoneFile() },
);
const p = await startTestPlatform({
  // Knot, the primary, is on loopback: not an address tenants' peers may have unless the operator allows it.
  // The zone is the default record limit's size (200,000) with its apex NS and glue on top: room for --records and more.
  args: ["--dns-port", String(dnsPort), "--dns-peer-allow", "127.0.0.0/8", "--dns-max-records-per-zone", String(RECORDS + 1000)],
  stateDir: join(work, "state"),
  nodeArgs: ["--import", monitor, ...(CPU_PROF ? ["--cpu-prof", "--cpu-prof-dir", CPU_PROF] : []), ...(args.includes("--trace-gc") ? ["--trace-gc"] : [])],
});
const results = { records: RECORDS };
let pr;
try {
  const probeZone = await p.api("POST", "/zones", { name: "probe.example", account: { id: p.accountId } });
  await p.api("POST", `/zones/${probeZone.body.result.id}/dns_records`, { type: "A", name: "www", content: "192.0.2.1" });
  pr = udpProbe(dnsPort, "www.probe.example");
  pr.reset();
  const A = `/accounts/${p.accountId}/secondary_dns`;
  const tsig = await p.api("POST", `${A}/tsigs`, { name: "xfr-key.", algo: "hmac-sha256.", secret });
  const peer = await p.api("POST", `${A}/peers`, { name: "knot", ip: "127.0.0.1", port: knotPort, tsig_id: tsig.body.result.id });
  const zone = await p.api("POST", "/zones", { name: ZONE, type: "secondary", account: { id: p.accountId } });
  const zoneId = zone.body.result.id;
  // The same measures with nothing to do for 5 s: what the machine's load alone costs the loop.
  const idleFrom = Date.now();
  await new Promise((r) => setTimeout(r, 5000));
  const idle = loopSamples(p.output(), idleFrom, Date.now());
  results.idle = { max_loop_stall_ms: Math.round(Math.max(...idle.map((s) => s.max_ms))), probe: pr.read() };
  results.rss_before_mb = Math.round(idle.at(-1).rss_mb);

  const measure = async (label, start, done) => {
    pr.reset();
    const t0 = Date.now();
    await start();
    await until(done);
    const t1 = Date.now();
    await new Promise((r) => setTimeout(r, 300));
    const samples = loopSamples(p.output(), t0, t1);
    results[label] = {
      seconds: (t1 - t0) / 1000,
      max_loop_stall_ms: Math.round(Math.max(...samples.map((s) => s.max_ms))),
      peak_rss_mb: Math.round(Math.max(...samples.map((s) => s.rss_mb))),
      peak_heap_mb: Math.round(Math.max(...samples.map((s) => s.heap_mb))),
      longest_gc_pause_ms: Math.round(Math.max(...samples.map((s) => s.gc_max_ms))),
      loop_delays_over_100ms: samples.filter((s) => s.max_ms > 100).length,
      intervals: samples.length,
      probe: pr.read(),
    };
  };
  const transfers = () => (p.logs().match(/"secondary zone transferred"/g) ?? []).length;
  await measure(
    "first_transfer",
    () => p.api("POST", `/zones/${zoneId}/secondary_dns/incoming`, { peers: [peer.body.result.id] }),
    async () => transfers() === 1,
  );
  await knsupdate(knotPort, `hmac-sha256:xfr-key:${secret}`, ZONE, ["update add changed.big.example. 300 A 192.0.2.99"]);
  await measure(
    "whole_zone_again",
    () => p.api("POST", `/zones/${zoneId}/secondary_dns/force_axfr`),
    async () => transfers() === 2,
  );
  // The platform handing the zone on: an AXFR of it from our server (loopback is in --axfr-allow by default).
  let served = [];
  await measure(
    "serving_axfr",
    async () => (served = await requestXfr({ host: "127.0.0.1", port: dnsPort, zone: ZONE, type: "AXFR" })),
    async () => true,
  );
  results.serving_axfr.records = served.length;
  const last = loopSamples(p.output(), Date.now() - 400, Date.now()).at(-1);
  results.rss_after_mb = Math.round(last.rss_mb);
  results.heap_after_mb = Math.round(last.heap_mb);
  console.log(JSON.stringify(results, null, 2));
} finally {
  pr?.stop();
  await p.stop();
  if (SERVER_OUTPUT) writeFileSync(SERVER_OUTPUT, p.output());
  if (KNOT_OUTPUT) writeFileSync(KNOT_OUTPUT, knot.log());
  await knot.stop();
  rmSync(work, { recursive: true, force: true });
}
