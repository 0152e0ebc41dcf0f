#!/usr/bin/env node
// DNS benchmark: the same zone served by our authoritative server, by PowerDNS 4.7 (gsqlite3,
// packet cache on as packaged) and, unsigned, by Knot DNS 3.2 (udp-workers = CPU count), all driven by dnsperf in one
// run; then the records API timed.
// Usage: npm run build && node bench/dns/bench.mjs [--seconds 15] [--clients 4] [--rounds 3] [--workers N] [--warmup S] [--prewarm N] [--dns-only]
//   [--before CHECKOUT] [--only-ours]
// Needs Debian packages pdns-server, pdns-backend-sqlite3 and dnsperf; installs them with apt-get if missing.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync, existsSync, mkdirSync } from "node:fs";
import { createServer } from "node:net";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { treeCpuSeconds } from "./proc-stats.mjs";

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : def;
};
const SECONDS = opt("seconds", 15);
const ROUNDS = opt("rounds", 3);
const CLIENTS = opt("clients", 4);
/** --dns-workers for edgecli; unset leaves the server's default (one answering process per CPU). */
const WORKERS = opt("workers", undefined);
/**
 * --warmup S: each server first answers S seconds of the same queries, not counted. Without it our first round includes
 * the server's warm-up (each distinct question asked once of the main process and put in each answering process's
 * cache, with V8 compiling that path as it goes), which Knot does before it answers at all (it compiles the zone at
 * load) and PowerDNS does as it fills its packet cache.
 */
const WARMUP = opt("warmup", 0);
/** --prewarm N: edgecli's --dns-prewarm (answers built ahead of any question; 0 = off, as before it existed). */
const PREWARM = opt("prewarm", undefined);
/** --dns-only skips the API timings (for comparing server settings quickly). */
const DNS_ONLY = args.includes("--dns-only");
/**
 * --dnssec signs the zone on both servers (ours: PATCH /dnssec; PowerDNS: `pdnsutil secure-zone`, live signing) and
 * sets the DO bit on every query (dnsperf -D), so both answer with RRSIGs and NSEC denials.
 */
const DNSSEC = args.includes("--dnssec");
/**
 * --before CHECKOUT: also serves the zone from another built checkout's edgecli (a `git worktree` of the commit to
 * compare with), in the same interleaved rounds, so a change is measured against its baseline under the same load.
 */
const BEFORE = args.includes("--before") ? args[args.indexOf("--before") + 1] : undefined;
/** --only-ours: no PowerDNS nor Knot (with --before: just the two builds, for quicker A/B runs). */
const ONLY_OURS = args.includes("--only-ours");
const ZONE = "bench.example";
const HOSTS = 1000;
const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const CLI = join(ROOT, "dist/bin/edgecli.js");
const work = mkdtempSync(join(tmpdir(), "dns-bench-"));
const children = [];
/** Servers started by a helper that stops them itself (Knot). */
const stoppers = [];

function have(cmd) {
  return spawnSync("sh", ["-c", `command -v ${cmd}`]).status === 0;
}

function ensureTools() {
  if (have("pdns_server") && have("pdnsutil") && have("dnsperf") && existsSync("/usr/share/doc/pdns-backend-sqlite3/schema.sqlite3.sql")) return;
  console.log("installing pdns-server pdns-backend-sqlite3 dnsperf with apt-get ...");
  execFileSync("apt-get", ["update", "-qq"], { stdio: "inherit" });
  execFileSync("apt-get", ["install", "-y", "-qq", "pdns-server", "pdns-backend-sqlite3", "dnsperf"], {
    stdio: "inherit",
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
  });
}

function freePort() {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** The zone: SOA, NS, 1,000 A hosts, MX, TXT, CNAME, as a BIND file both servers load. */
function zoneFile() {
  const lines = [
    `$ORIGIN ${ZONE}.`,
    `@ 3600 IN SOA ns1.edge-platform.test. dns.edge-platform.test. 2026010101 10000 2400 604800 1800`,
    `@ 86400 IN NS ns1.edge-platform.test.`,
    `@ 86400 IN NS ns2.edge-platform.test.`,
    `@ 300 IN MX 10 mail.${ZONE}.`,
    `@ 300 IN TXT "v=spf1 -all"`,
    `www 300 IN CNAME host1.${ZONE}.`,
    `mail 300 IN A 203.0.113.250`,
  ];
  for (let i = 0; i < HOSTS; i++) lines.push(`host${i} 300 IN A 10.${(i >> 8) & 255}.${i & 255}.1`);
  return lines.join("\n") + "\n";
}

/** 90% existing names (mostly A), 10% names that do not exist. */
function queryFile() {
  const q = [];
  for (let i = 0; i < 10000; i++) {
    const r = i % 10;
    if (r === 9) q.push(`nx${i}.${ZONE} A`);
    else if (r === 8) q.push(i % 20 === 8 ? `${ZONE} MX` : `www.${ZONE} A`);
    else q.push(`host${(i * 7) % HOSTS}.${ZONE} A`);
  }
  return q.join("\n") + "\n";
}

function waitFor(child, pattern, what) {
  return new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`${what} did not start:\n${out}`)), 30000);
    const on = (d) => {
      out += d.toString();
      const m = out.match(pattern);
      if (m) {
        clearTimeout(timer);
        resolve(m);
      }
    };
    child.stdout.on("data", on);
    child.stderr.on("data", on);
    child.on("exit", (code) => reject(new Error(`${what} exited with ${code}:\n${out}`)));
  });
}

async function startOurs(port, cli = CLI, stateDir = join(work, "edge")) {
  const token = randomBytes(30)
    .toString("base64")
    .replace(/[^A-Za-z0-9]/g, "")
    .slice(0, 40)
    .padEnd(40, "x");
  const accountId = randomBytes(16).toString("hex");
  const child = spawn(
    process.execPath,
    [
      cli,
      "serve",
      "--port",
      "0",
      "--state-dir",
      stateDir,
      "--dns-port",
      String(port),
      ...(WORKERS === undefined ? [] : ["--dns-workers", String(WORKERS)]),
      ...(PREWARM === undefined ? [] : ["--dns-prewarm", String(PREWARM)]),
      "--log-level",
      "warn",
    ],
    {
      env: {
        ...process.env,
        EDGE_BOOTSTRAP_ACCOUNT_ID: accountId,
        EDGE_BOOTSTRAP_EMAIL: "bench@example.com",
        EDGE_BOOTSTRAP_API_KEY: randomBytes(19).toString("hex").slice(0, 37),
        EDGE_BOOTSTRAP_API_TOKEN: token,
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  children.push(child);
  const [, api] = await waitFor(child, /api\s+(http:\/\/\S+)/, "edgecli serve");
  return { child, api, token, accountId };
}

async function startPdns(port) {
  const dir = join(work, "pdns");
  mkdirSync(dir);
  const db = join(dir, "pdns.sqlite3");
  execFileSync("sqlite3", [db], { input: (await import("node:fs")).readFileSync("/usr/share/doc/pdns-backend-sqlite3/schema.sqlite3.sql") }).toString();
  writeFileSync(
    join(dir, "pdns.conf"),
    [
      `launch=gsqlite3`,
      `gsqlite3-database=${db}`,
      // Keys and live signing live in the backend's own tables.
      ...(DNSSEC ? ["gsqlite3-dnssec=yes"] : []),
      `local-address=127.0.0.1`,
      `local-port=${port}`,
      `daemon=no`,
      `guardian=no`,
      `socket-dir=${dir}`,
      `setuid=`,
      `setgid=`,
      `loglevel=3`,
      `disable-syslog=yes`,
    ].join("\n") + "\n",
  );
  writeFileSync(join(dir, "zone.txt"), zoneFile());
  execFileSync("pdnsutil", ["--config-dir", dir, "load-zone", ZONE, join(dir, "zone.txt")], { stdio: "pipe" });
  if (DNSSEC) execFileSync("pdnsutil", ["--config-dir", dir, "secure-zone", ZONE], { stdio: "pipe" });
  const child = spawn("pdns_server", [`--config-dir=${dir}`], { stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  await waitFor(child, /TCP server bound/, "pdns_server");
  await answering(port);
  return child;
}

/**
 * Knot DNS (Debian `knot`, 3.2 in bookworm), the fastest authoritative server Debian ships, as a non-root process on a
 * free port, serving the same zone file, with one UDP worker per CPU. Unsigned runs only (its DNSSEC signs offline,
 * which is not what the signed run compares).
 */
async function startKnot(port) {
  // The test suite's runner of a private knotd (src/dns/testing/knot.ts, compiled by npm run build).
  const { startKnot: start } = await import(join(ROOT, "dist/dns/testing/knot.js"));
  const knot = await start(port, `zone:\n  - domain: ${ZONE}\n`, { [`${ZONE}.zone`]: zoneFile() }, [`udp-workers: ${cpus().length}`, "background-workers: 1"]);
  stoppers.push(() => knot.stop());
  await answering(port);
  return knot;
}

/** Resolves once the server answers a SOA query for the zone. */
async function answering(port) {
  const dgram = await import("node:dgram");
  const q = Buffer.concat([
    Buffer.from([0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0]),
    ...`${ZONE}`.split(".").map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l)])),
    Buffer.from([0, 0, 6, 0, 1]),
  ]);
  for (let i = 0; i < 100; i++) {
    const ok = await new Promise((resolve) => {
      const s = dgram.createSocket("udp4");
      const t = setTimeout(() => (s.close(), resolve(false)), 200);
      s.on("message", (m) => (clearTimeout(t), s.close(), resolve((m[3] & 0xf) === 0)));
      s.send(q, port, "127.0.0.1");
    });
    if (ok) return;
  }
  throw new Error(`nothing answers on port ${port}`);
}

/** One dnsperf run of `seconds` against a server; raw totals, so rounds can be added up. */
function dnsperf(port, label, pid, seconds) {
  const cpu0 = treeCpuSeconds(pid);
  const r = spawnSync(
    "dnsperf",
    [
      "-s",
      "127.0.0.1",
      "-p",
      String(port),
      "-d",
      join(work, "queries.txt"),
      "-l",
      String(seconds),
      "-c",
      String(CLIENTS),
      "-q",
      "100",
      ...(DNSSEC ? ["-D"] : []),
    ],
    { encoding: "utf8" },
  );
  const out = r.stdout + r.stderr;
  const num = (re) => Number(out.match(re)?.[1]);
  const res = {
    label,
    runSeconds: num(/Run time \(s\):\s+([\d.]+)/),
    latencySum: num(/Average Latency \(s\):\s+([\d.]+)/) * num(/Queries completed:\s+(\d+)/),
    lost: num(/Queries lost:\s+(\d+)/),
    completed: num(/Queries completed:\s+(\d+)/),
    cpuSeconds: treeCpuSeconds(pid) - cpu0,
  };
  if (!res.completed || !res.runSeconds) throw new Error(`dnsperf against ${label} failed:\n${out}`);
  return res;
}

/**
 * The servers in interleaved rounds (ours, PowerDNS, Knot, ours, ...), so a neighbour's burst of load on this
 * shared machine does not fall on one server only; totals are summed over the rounds.
 */
function alternate(servers) {
  const totals = servers.map((s) => ({ label: s.label, runSeconds: 0, latencySum: 0, lost: 0, completed: 0, cpuSeconds: 0 }));
  for (let round = 0; round < ROUNDS; round++) {
    servers.forEach((s, i) => {
      const r = dnsperf(s.port, s.label, s.pid, SECONDS / ROUNDS);
      for (const k of ["runSeconds", "latencySum", "lost", "completed", "cpuSeconds"]) totals[i][k] += r[k];
      // Per round too: a server's first round shows its warm-up (see --warmup).
      console.log(
        `  round ${round + 1} ${s.label}: ${Math.round(r.completed / r.runSeconds)} q/s, ${((r.cpuSeconds / r.completed) * 1e6).toFixed(1)} µs CPU/query`,
      );
    });
  }
  return totals.map((t) => ({
    ...t,
    qps: t.completed / t.runSeconds,
    latencyMs: (t.latencySum / t.completed) * 1000,
    cpuPerQueryUs: (t.cpuSeconds / t.completed) * 1e6,
  }));
}

// undici's request() from the project's dependencies: a lighter client than fetch, so the client costs less of the 2 CPUs.
const { request, FormData } = await import(join(ROOT, "node_modules/undici/index.js"));

async function api(base, token, method, path, body, headers = {}) {
  const res = await request(base + path, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body && !(body instanceof FormData) ? { "content-type": "application/json" } : {}), ...headers },
    body: body instanceof FormData ? body : body ? JSON.stringify(body) : undefined,
  });
  const json = await res.body.json();
  if (!json.success) throw new Error(`${method} ${path}: ${JSON.stringify(json.errors)}`);
  return json;
}

async function main() {
  ensureTools();
  if (!existsSync(CLI)) throw new Error("build first: npm run build");
  if (!have("sqlite3")) execFileSync("apt-get", ["install", "-y", "-qq", "sqlite3"], { stdio: "inherit" });
  writeFileSync(join(work, "queries.txt"), queryFile());
  const [ourPort, pdnsPort, knotPort] = [await freePort(), await freePort(), await freePort()];
  const withKnot = !DNSSEC && !ONLY_OURS && have("knotd");
  if (!DNSSEC && !ONLY_OURS && !withKnot) console.log("knotd not found (Debian knot): Knot left out of the run");

  /** An edgecli serving the bench zone (imported from the same file the others load). */
  const serveZone = async (port, cli, stateDir) => {
    const server = await startOurs(port, cli, stateDir);
    const zone = (await api(server.api, server.token, "POST", "/zones", { name: ZONE, account: { id: server.accountId } })).result;
    const form = new FormData();
    form.set("file", new Blob([zoneFile()]), "zone.txt");
    const imported = (await api(server.api, server.token, "POST", `/zones/${zone.id}/dns_records/import`, form)).result;
    if (DNSSEC) await api(server.api, server.token, "PATCH", `/zones/${zone.id}/dnssec`, { status: "active" });
    return { ...server, zone, imported };
  };
  const ours = await serveZone(ourPort);
  const { imported } = ours;
  const beforePort = BEFORE ? await freePort() : 0;
  const before = BEFORE ? await serveZone(beforePort, join(BEFORE, "dist/bin/edgecli.js"), join(work, "edge-before")) : undefined;
  const pdns = ONLY_OURS ? undefined : await startPdns(pdnsPort);
  const knot = withKnot ? await startKnot(knotPort) : undefined;

  console.log(
    `zone ${ZONE}: ${imported.recs_added} records imported into edgecli${before ? " (both builds)" : ""}${pdns ? `; PowerDNS${knot ? " and Knot" : ""} loaded the same file` : ""}`,
  );
  console.log(`edgecli --dns-workers ${WORKERS ?? "default (one per CPU, up to 4)"}`);
  console.log(
    `dnsperf ${SECONDS}s each in ${ROUNDS} alternating rounds, ${CLIENTS} clients, 100 outstanding, 90% existing / 10% NXDOMAIN, on ${cpus().length} CPUs${DNSSEC ? ", zone signed on both, DO bit on every query" : ""}`,
  );
  const servers = [
    { port: ourPort, label: "edgecli (Node, packet cache)", pid: ours.child.pid },
    ...(before ? [{ port: beforePort, label: `edgecli before (${BEFORE})`, pid: before.child.pid }] : []),
    ...(pdns ? [{ port: pdnsPort, label: "PowerDNS 4.7 gsqlite3", pid: pdns.pid }] : []),
    ...(knot ? [{ port: knotPort, label: `Knot DNS 3.2 (udp-workers ${cpus().length})`, pid: knot.pid }] : []),
  ];
  if (WARMUP > 0) {
    console.log(`warm-up: ${WARMUP}s of the same queries per server, not counted`);
    for (const s of servers) dnsperf(s.port, s.label, s.pid, WARMUP);
  }
  const results = alternate(servers);
  const [a] = results;
  const byLabel = (label) => results.find((r) => r.label === label);
  const [prev, b, k] = [before && byLabel(servers[1].label), pdns && byLabel("PowerDNS 4.7 gsqlite3"), knot && results.at(-1)];
  pdns?.kill("SIGTERM");
  await knot?.stop();
  const report = () => {
    console.log("");
    console.log("| server | queries/s | avg latency ms | lost | server CPU per query |");
    console.log("|---|---|---|---|---|");
    for (const r of results) console.log(`| ${r.label} | ${Math.round(r.qps)} | ${r.latencyMs.toFixed(3)} | ${r.lost} | ${r.cpuPerQueryUs.toFixed(1)} µs |`);
    console.log("");
    if (prev)
      console.log(`edgecli / before: ${(a.qps / prev.qps).toFixed(2)} × the rate, ${(a.cpuPerQueryUs / prev.cpuPerQueryUs).toFixed(2)} × the CPU per query`);
    if (b) console.log(`ratio edgecli / PowerDNS: ${(a.qps / b.qps).toFixed(2)}`);
    if (k) console.log(`ratio edgecli / Knot: ${(a.qps / k.qps).toFixed(2)}`);
  };
  if (DNS_ONLY) return report();

  // API: single-record creates, then a 10,000-record zone listed.
  const z2 = (await api(ours.api, ours.token, "POST", "/zones", { name: "api-bench.example", account: { id: ours.accountId } })).result;
  const N = 2000;
  const CONC = 8;
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONC }, async () => {
      while (next < N) {
        const i = next++;
        await api(ours.api, ours.token, "POST", `/zones/${z2.id}/dns_records`, {
          type: "A",
          name: `r${i}`,
          content: `10.1.${(i >> 8) & 255}.${i & 255}`,
          ttl: 300,
        });
      }
    }),
  );
  const createSecs = (performance.now() - t0) / 1000;
  const SEQ = 1000;
  const t0s = performance.now();
  for (let i = 0; i < SEQ; i++)
    await api(ours.api, ours.token, "POST", `/zones/${z2.id}/dns_records`, { type: "AAAA", name: `s${i}`, content: `2001:db8:1::${i.toString(16)}`, ttl: 300 });
  const seqSecs = (performance.now() - t0s) / 1000;
  const z3 = (await api(ours.api, ours.token, "POST", "/zones", { name: "list-bench.example", account: { id: ours.accountId } })).result;
  for (let b0 = 0; b0 < 10000; b0 += 2500) {
    const posts = Array.from({ length: 2500 }, (_, k) => ({
      type: "A",
      name: `n${b0 + k}`,
      content: `10.2.${((b0 + k) >> 8) & 255}.${(b0 + k) & 255}`,
      ttl: 300,
    }));
    await api(ours.api, ours.token, "POST", `/zones/${z3.id}/dns_records/batch`, { posts });
  }
  const t1 = performance.now();
  const all = await api(ours.api, ours.token, "GET", `/zones/${z3.id}/dns_records?per_page=10000`);
  const listOne = performance.now() - t1;
  const t2 = performance.now();
  let got = 0;
  for (let page = 1; ; page++) {
    const r = await api(ours.api, ours.token, "GET", `/zones/${z3.id}/dns_records?per_page=100&page=${page}`);
    got += r.result.length;
    if (r.result.length === 0) break;
  }
  const listPaged = performance.now() - t2;

  report();
  console.log(`\nAPI: ${N} single-record POSTs (${CONC} concurrent): ${(N / createSecs).toFixed(0)} records/s`);
  console.log(`API: ${SEQ} single-record POSTs one after another: ${(SEQ / seqSecs).toFixed(0)} records/s`);
  console.log(`API: list of ${all.result.length} records in one request (per_page=10000): ${listOne.toFixed(0)} ms`);
  console.log(`API: list of ${got} records paged by 100 until the empty page (SDK style): ${listPaged.toFixed(0)} ms`);
}

main()
  .catch((e) => {
    console.error(e);
    process.exitCode = 1;
  })
  .finally(() => {
    for (const c of children) if (c.exitCode === null) c.kill("SIGTERM");
    for (const stop of stoppers) void stop().catch(() => {});
    setTimeout(() => rmSync(work, { recursive: true, force: true }), 500);
  });
