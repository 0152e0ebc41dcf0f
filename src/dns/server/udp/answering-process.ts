// Entry point of a UDP answering process (a child of `edgecli serve` forked through node:cluster, see pool.ts). It answers
// from a cache of wire answers; a question it has not seen goes to the main process, which owns the zones.
// With the native addon it has a socket of its own on the DNS port (SO_REUSEPORT, see native/udp-fast.cc);
// without it, it shares the cluster's one socket with its siblings. Kept free of the zone code so it starts
// fast and stays small.
import type dgram from "node:dgram";
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { BIND_ENV, type FromAnsweringProcess, type ToAnsweringProcess, type AnsweringProcessBind } from "./messages.js";
import { loadNativeUdp, type NativeUdp } from "./fast-path.js";
import { createUdpSocket, WireCache } from "../wire-cache.js";
import { formerrReply, screenQuery } from "../wire-screen.js";
import { AnswerCounts, CountDeltas, totalsOf } from "../wire-stats.js";
import { QueryCounter } from "../query-counts.js";

/** Questions waiting for the main process beyond this are dropped (the client retries), so a flood of misses cannot grow memory. */
const MAX_PENDING = 10_000;
/** How often the counts go to the main process (its metrics: src/dns/metrics.ts). */
const STATS_INTERVAL_MS = 5_000;

interface Waiter {
  id0: number;
  id1: number;
  port: number;
  address: string;
}

const bind = JSON.parse(process.env[BIND_ENV] ?? "null") as AnsweringProcessBind | null;
if (!bind || !process.send) {
  process.stderr.write("answering-process: started outside `edgecli serve`\n");
  process.exit(2);
}
const send = (m: FromAnsweringProcess) => process.send!(m);
const cache = new WireCache();
const loaded = loadNativeUdp();
/** When set, cached answers live in the addon and it answers them itself; only misses reach this file. */
let native: NativeUdp | undefined;
let nativeWhy = "why" in loaded ? loaded.why : "";
/** Queries asked of the main process by sequence number; the same question asked again waits on the first. */
const pending = new Map<number, { query: Buffer; key: string; waiters: Waiter[]; notify: boolean }>();
/** DNS NOTIFY (RFC 1996): answered by the main process for its sender, never cached nor shared with another query. */
const isNotify = (msg: Buffer) => ((msg[2] >> 3) & 0xf) === 4;
const pendingByKey = new Map<string, number>();
let seq = 0;
/** Answers sent from JavaScript (cache hits, FORMERRs); the main process counts those it builds itself. */
const answered = new AnswerCounts();
const cacheUse = { hits: 0, misses: 0 };

/** The JavaScript path's socket (the cluster's shared one); unset on the native path, which has its own. */
let socket: dgram.Socket | undefined;

/**
 * How often this process sends its counts of answers to the main process (DNS analytics; the rollups are written
 * every 10 s). The answers the native addon sends from its own cache are read from it then, added up per cached
 * answer (hitCounts): never a callback per query.
 */
const COUNTS_EVERY_MS = 5_000;
const sendCounts = () => {
  if (counter.size > 0) send({ t: "counts", c: counter.drain() });
};
const counter = new QueryCounter(sendCounts);
/** Adds the native thread's repeats to the counts; hits whose question it could not keep are left out (see hitCounts). */
function takeNativeHits(): void {
  if (!native) return;
  const counts = native.hitCounts();
  for (let i = 0; i + 1 < counts.length; i += 2) counter.add(counts[i] as Buffer, counts[i + 1] as number);
}
setInterval(() => {
  takeNativeHits();
  sendCounts();
}, COUNTS_EVERY_MS).unref();

/** A reply from the socket the query came to, so it leaves from the DNS port. */
function reply(msg: Buffer, port: number, address: string): void {
  counter.add(msg);
  if (native) native.send(msg, address, port);
  else socket!.send(msg, port, address);
}

function onQuery(msg: Buffer, address: string, port: number): void {
  if (msg.length < 12) return;
  const key = WireCache.key(msg);
  const hit = native ? undefined : cache.answer(key, msg);
  if (hit) {
    answered.count(msg, hit);
    cacheUse.hits++;
    reply(hit, port, address);
    return;
  }
  // The native thread counts its own misses (this function only sees those).
  if (!native) cacheUse.misses++;
  // Garbage is answered (or dropped) here, never sent to the main process: it must not queue before real questions.
  const screen = screenQuery(msg);
  if (screen !== "answer") {
    if (screen === "formerr") {
      answered.countFormerr(msg);
      reply(formerrReply(msg), port, address);
    }
    return;
  }
  const waiter = { id0: msg[0], id1: msg[1], port, address };
  if (isNotify(msg)) {
    if (pending.size >= MAX_PENDING) return;
    seq = (seq + 1) % Number.MAX_SAFE_INTEGER;
    pending.set(seq, { query: msg, key, waiters: [waiter], notify: true });
    send({ t: "query", s: seq, q: msg, from: address });
    return;
  }
  const s = pendingByKey.get(key);
  if (s !== undefined) {
    pending.get(s)!.waiters.push(waiter);
    return;
  }
  if (pending.size >= MAX_PENDING) return;
  seq = (seq + 1) % Number.MAX_SAFE_INTEGER;
  pending.set(seq, { query: msg, key, waiters: [waiter], notify: false });
  pendingByKey.set(key, seq);
  send({ t: "query", s: seq, q: msg });
}

function onAnswer(s: number, answer: Buffer | null): void {
  const p = pending.get(s);
  if (!p) return;
  pending.delete(s);
  if (p.notify) {
    if (answer) reply(answer, p.waiters[0].port, p.waiters[0].address);
    return;
  }
  pendingByKey.delete(p.key);
  if (!answer) return;
  // Answers computed before a change arrive before that change's flush (one ordered channel), so caching is safe.
  if (native) native.set(p.query, answer);
  else cache.set(p.key, answer);
  // The main process counted this answer once; the same question's other askers are counted here.
  for (let i = 1; i < p.waiters.length; i++) answered.count(p.query, answer);
  for (const w of p.waiters) {
    const out = Buffer.from(answer);
    out[0] = w.id0;
    out[1] = w.id1;
    reply(out, w.port, w.address);
  }
}

process.on("message", (m: ToAnsweringProcess) => {
  if (m.t === "flush") {
    native?.flush();
    cache.clear();
    send({ t: "flushed", g: m.g });
  } else if (m.t === "answer") onAnswer(m.s, m.a);
  else if (m.t === "cache") {
    if (native) native.set(m.q, m.a);
    else cache.set(WireCache.key(m.q), m.a);
  }
});

const jsDeltas = new CountDeltas();
const nativeDeltas = new CountDeltas();
const reportedCache = { hits: 0, misses: 0, nativeHits: 0, nativeMisses: 0 };
/** Sends what was counted since the last report, if anything. */
function reportStats(): void {
  const pairs = jsDeltas.fromTotals(totalsOf(answered));
  let hits = cacheUse.hits - reportedCache.hits;
  let misses = cacheUse.misses - reportedCache.misses;
  reportedCache.hits = cacheUse.hits;
  reportedCache.misses = cacheUse.misses;
  if (native) {
    pairs.push(...nativeDeltas.fromTotals(native.answered()));
    const s = native.stats();
    hits += s.hits - reportedCache.nativeHits;
    misses += s.misses - reportedCache.nativeMisses;
    reportedCache.nativeHits = s.hits;
    reportedCache.nativeMisses = s.misses;
  }
  if (pairs.length > 0 || hits > 0 || misses > 0) send({ t: "stats", answered: pairs, hits, misses });
}
setInterval(reportStats, STATS_INTERVAL_MS).unref();

function bindFailed(err: NodeJS.ErrnoException): never {
  send({ t: "bind-error", code: err.code ?? "", message: err.message });
  process.exit(1);
}

/** The native path: a socket of this process's own on the DNS port, read by the addon's thread. */
async function listenNatively(addon: NativeUdp): Promise<void> {
  // A name resolves as createUdpSocket's does (IPv4 unless the host is an IPv6 literal), to the address TCP listens on.
  const { address } = await lookup(bind!.host, { family: isIP(bind!.host) === 6 ? 6 : 4 }).catch(bindFailed);
  try {
    addon.listen(address, bind!.port, onQuery);
  } catch (err) {
    bindFailed(err as NodeJS.ErrnoException);
  }
  native = addon;
  send({ t: "ready", native: "" });
}

/** The JavaScript path: the cluster primary's socket, shared by every answering process. */
function listenShared(): void {
  const shared = createUdpSocket(bind!.host);
  let bound = false;
  shared.on("message", (msg: Buffer, rinfo: dgram.RemoteInfo) => onQuery(msg, rinfo.address, rinfo.port));
  shared.on("error", (err: NodeJS.ErrnoException) => {
    if (!bound) bindFailed(err);
    // A send to an unreachable client is not a reason to stop answering the others.
  });
  // exclusive: false asks the cluster primary for its shared socket (every answering process gets the same one).
  shared.bind({ port: bind!.port, address: bind!.host, exclusive: false }, () => {
    bound = true;
    socket = shared;
    send({ t: "ready", native: nativeWhy });
  });
}

if ("native" in loaded) void listenNatively(loaded.native);
else listenShared();

// Ctrl-C reaches the whole process group; the platform decides when its answering processes stop
// (SIGTERM from it, or the IPC channel closing, after which a node:cluster child exits on its own).
process.on("SIGINT", () => {});
