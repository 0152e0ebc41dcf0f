#!/usr/bin/env node
// Garbage flood: one client sends random datagrams (1-600 bytes) to the DNS server as fast as it can, with a
// valid query interleaved after every few of them, and we measure how fast the valid queries are answered.
// Goal: at least 99% of the valid queries answered within 100 ms while 20,000 garbage datagrams arrive.
//
// Usage: npm run build && node bench/dns/garbage-flood.mjs [--garbage 20000] [--every 20] [--rounds 3] [--workers N] [--control]
//        EDGE_DNS_NATIVE=0 node bench/dns/garbage-flood.mjs     # the JavaScript UDP path instead of the native one
// --workers: --dns-workers of the server (default: one per CPU, at most 4, as `edgecli serve` picks; 0 = main process).
// --control: instead of garbage, the cached question (a valid query answered from the cache), to compare what one
//            garbage datagram costs the server with what one answer costs.
// Valid queries alternate between a cached name ("hot": answered by the answering process alone) and a name
// never asked before ("cold": a miss, answered by the main process from the zones). Nothing is retried: a
// query without an answer within 2 s counts as lost.
import dgram from "node:dgram";
import { randomBytes } from "node:crypto";
import { availableParallelism, loadavg } from "node:os";
import * as packet from "dns-packet";
import { startTestPlatform } from "../../dist/core/testing/platform.js";
import { treeCpuSeconds, udpReceiveDrops } from "./proc-stats.mjs";

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : def;
};
const GARBAGE = opt("garbage", 20_000);
const EVERY = opt("every", 20);
const ROUNDS = opt("rounds", 3);
const WORKERS = opt("workers", availableParallelism() > 1 ? Math.min(availableParallelism(), 4) : 0);
const CONTROL = args.includes("--control");
const ZONE = "flood.example";
const DEADLINE_MS = 100;
const LOST_AFTER_MS = 2000;

const p = await startTestPlatform({ args: ["--dns-workers", String(WORKERS)] });
const port = Number(p.endpoints.dns_udp.split(":").pop());
const path = WORKERS > 1 ? (process.env.EDGE_DNS_NATIVE === "0" ? "JavaScript (EDGE_DNS_NATIVE=0)" : "native") : "main process (JavaScript)";

function query(name, id) {
  return packet.encode({ type: "query", id, flags: packet.RECURSION_DESIRED, questions: [{ type: "A", name, class: "IN" }] });
}

const randomDatagram = () => randomBytes(1 + Math.floor(Math.random() * 600));
const cachedQuestion = () => query(`www.${ZONE}`, Math.floor(Math.random() * 65536));
const percentile = (sorted, q) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] : NaN);
const bound = (s) => new Promise((r) => s.bind(0, "127.0.0.1", r));

/** One flood: the valid queries (kind, whether sent during the flood, latency in ms or undefined when lost), and what it cost. */
async function flood(round) {
  const valid = dgram.createSocket("udp4");
  const junk = dgram.createSocket("udp4");
  let formerrs = 0;
  junk.on("message", () => formerrs++);
  const asked = new Map();
  valid.on("message", (m) => {
    const q = asked.get(m.readUInt16BE(0));
    if (q && q.latency === undefined) q.latency = performance.now() - q.sentAt;
  });
  await Promise.all([bound(valid), bound(junk)]);
  const ports = { server: port, client: valid.address().port, junk: junk.address().port };
  const dropsBefore = Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, udpReceiveDrops(v)]));
  let id = 0;
  let sending = true;
  const ask = () => {
    id++;
    const kind = id % 2 === 0 ? "hot" : "cold";
    const name = kind === "hot" ? `www.${ZONE}` : `cold-${round}-${id}.${ZONE}`;
    asked.set(id, { kind, during: sending, sentAt: performance.now(), latency: undefined });
    valid.send(query(name, id), port, "127.0.0.1");
  };
  const cpu0 = treeCpuSeconds(p.process.pid);
  const started = performance.now();
  for (let sent = 0; sent < GARBAGE;) {
    for (let k = 0; k < EVERY && sent < GARBAGE; k++, sent++) junk.send(CONTROL ? cachedQuestion() : randomDatagram(), port, "127.0.0.1");
    ask();
    // Let replies in, so a latency is the server's and not this loop's.
    await new Promise((r) => setImmediate(r));
  }
  const floodSeconds = (performance.now() - started) / 1000;
  // Replies still on their way belong to the flood's cost.
  await new Promise((r) => setTimeout(r, 100));
  const cpuSeconds = treeCpuSeconds(p.process.pid) - cpu0;
  sending = false;
  // Then a second of valid queries alone: does the server catch up at once, or stay quiet?
  const after = performance.now();
  while (performance.now() - after < 1000) {
    ask();
    await new Promise((r) => setTimeout(r, 5));
  }
  const waitUntil = performance.now() + LOST_AFTER_MS;
  while ([...asked.values()].some((q) => q.latency === undefined) && performance.now() < waitUntil) await new Promise((r) => setTimeout(r, 20));
  const drops = Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, udpReceiveDrops(v) - dropsBefore[k]]));
  valid.close();
  junk.close();
  return { asked: [...asked.values()], floodSeconds, formerrs, drops, cpuSeconds };
}

function summary(label, qs) {
  const lat = qs
    .map((q) => q.latency)
    .filter((l) => l !== undefined)
    .sort((a, b) => a - b);
  const within = lat.filter((l) => l <= DEADLINE_MS).length;
  const pct = qs.length ? (100 * within) / qs.length : NaN;
  const ms = (v) => v.toFixed(2);
  return `| ${label} | ${qs.length} | ${pct.toFixed(2)}% | ${qs.length - lat.length} | ${ms(percentile(lat, 0.5))} | ${ms(percentile(lat, 0.99))} | ${ms(lat.at(-1) ?? NaN)} |`;
}

try {
  const zone = (await p.api("POST", "/zones", { name: ZONE, account: { id: p.accountId } })).body.result;
  await p.api("POST", `/zones/${zone.id}/dns_records`, { type: "A", name: "www", content: "203.0.113.7", ttl: 300 });
  const garbage = CONTROL ? `control: ${GARBAGE} cached questions instead of garbage` : `${GARBAGE} random datagrams (1-600 bytes)`;
  console.log(`garbage flood: ${garbage} per round, a valid query after every ${EVERY}; --dns-workers ${WORKERS}, ${path}`);
  console.log(`load average before: ${loadavg()[0].toFixed(1)} on ${availableParallelism()} CPUs`);
  const all = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const r = await flood(round);
    all.push(...r.asked);
    const during = r.asked.filter((q) => q.during).length;
    const datagrams = during + GARBAGE;
    console.log(
      `round ${round}: ${GARBAGE} garbage datagrams in ${r.floodSeconds.toFixed(2)} s (${Math.round(GARBAGE / r.floodSeconds).toLocaleString("en-US")}/s), ` +
        `${r.formerrs} ${CONTROL ? "answers" : "FORMERR replies"} to them, ${during} valid queries during the flood; ` +
        `server CPU ${(r.cpuSeconds * 1000).toFixed(0)} ms = ${((r.cpuSeconds / datagrams) * 1e6).toFixed(1)} µs per datagram; ` +
        `dropped with a full receive buffer: ${r.drops.server} at the server, ${r.drops.client + r.drops.junk} at this client`,
    );
  }
  console.log(`load average after: ${loadavg()[0].toFixed(1)}`);
  console.log(`\n| valid queries | count | answered within ${DEADLINE_MS} ms | lost | p50 ms | p99 ms | max ms |`);
  console.log("|---|---|---|---|---|---|---|");
  const during = all.filter((q) => q.during);
  console.log(summary("during the flood, all", during));
  console.log(
    summary(
      "during, cached name",
      during.filter((q) => q.kind === "hot"),
    ),
  );
  console.log(
    summary(
      "during, new name (miss)",
      during.filter((q) => q.kind === "cold"),
    ),
  );
  console.log(
    summary(
      "the second after",
      all.filter((q) => !q.during),
    ),
  );
} finally {
  await p.dispose();
}
