import cluster, { type Worker } from "node:cluster";
import { fileURLToPath } from "node:url";
import type { Logger } from "../../../core/logger.js";
import type { QueryCount } from "../query-counts.js";
import { BIND_ENV, type AnsweringStats, type FromAnsweringProcess, type ToAnsweringProcess, type AnsweringProcessBind } from "./messages.js";

/** Beside this file both in dist/dns/ (tsc) and in dist/bin/ (the bundle, where it is an entry of its own). */
const ANSWERING_PROCESS_SCRIPT = fileURLToPath(new URL("./answering-process.js", import.meta.url));
/**
 * Node 20 sends each UDP reply with its own sendto(); with this flag replies go through libuv's queue, which
 * writes the replies of one receive burst with a single sendmmsg(). Same bytes, fewer system calls (9-16%
 * more answers per second measured with dnsperf, bench/dns/RESULTS.md). The option exists for Node's own
 * tests, but what it selects is the path Node takes anyway whenever a direct send would block. Should a
 * Node version refuse it, the process exits with code 9 and is started again without it.
 */
const BATCH_SENDS_FLAG = "--test-udp-no-try-send";
const BAD_OPTION_EXIT = 9;
/** A process that does not confirm a flush in this time is killed: it must never answer from an old cache. */
const FLUSH_TIMEOUT_MS = 3000;
const STOP_TIMEOUT_MS = 3000;
const RESTART_MIN_MS = 100;
const RESTART_MAX_MS = 5000;
/** A process that lived this long before dying is restarted at once; faster deaths back off. */
const STABLE_MS = 10_000;

interface Member {
  /** node:cluster calls its children Workers; these are DNS answering processes, nothing of Cloudflare Workers. */
  child: Worker;
  startedAt: number;
  exited: Promise<void>;
  /** Flushes waiting for this process's acknowledgement, by generation. */
  waiters: { g: number; done: () => void }[];
  /**
   * Whether it may hold answers from before the next change: its cache only ever fills with answers from
   * this process, so one that was sent none since its last flush has nothing to forget (API writes on a
   * server nobody queries cost no round trip).
   */
  dirty: boolean;
  /** Confirmation of the last flush sent to it. */
  lastFlush: Promise<void>;
}

/**
 * The UDP answering processes of the DNS server: children forked through node:cluster, each with a SO_REUSEPORT socket of its own on
 * the port (native path, answering-process.ts), or else sharing one UDP socket that the cluster primary (this process)
 * binds and hands to each; either way the kernel spreads queries over them. They answer
 * from their own cache of wire answers and ask this process for anything else. A change to the zones
 * is flushed to every one of them, acknowledged, before the API call that made it returns.
 */
export class UdpAnsweringPool {
  private readonly members = new Set<Member>();
  private generation = 0;
  private started = false;
  private stopping = false;
  private batchSends = true;
  private pathLogged = false;
  private restartDelay = RESTART_MIN_MS;
  private readonly restartTimers = new Set<NodeJS.Timeout>();

  constructor(
    private readonly count: number,
    private readonly bind: AnsweringProcessBind,
    /** Answers a query the processes have no cached answer for (`from`: the sender, given for NOTIFY); undefined drops it. */
    private readonly answer: (query: Buffer, from?: string) => Buffer | undefined,
    private readonly log: Logger,
    /** A process started to replace one that died is ready (its cache is empty: answers may be built for it). */
    private readonly replaced: () => void = () => {},
    /** A process's report of what it answered and of its cache since its last one (every few seconds): metrics. */
    private readonly stats: (report: AnsweringStats) => void = () => {},
    /** The answers a process sent, by question and rcode (DNS analytics). */
    private readonly counted: (counts: QueryCount[]) => void = () => {},
  ) {}

  /** Resolves once every process has the socket; rejects with the bind error (its code kept) if one cannot. */
  async start(): Promise<void> {
    try {
      await Promise.all(Array.from({ length: this.count }, () => this.spawn()));
      this.started = true;
    } catch (err) {
      await this.stop();
      throw err;
    }
  }

  /** Clears every process's cache; resolves when each has confirmed it (or is gone). */
  flush(): Promise<void> {
    const g = ++this.generation;
    return Promise.all([...this.members].map((m) => this.flushOne(m, g))).then(() => undefined);
  }

  /** Caches an answer built ahead of any question (prewarm.ts) in every process; a later flush forgets it like any other. */
  offer(query: Buffer, answer: Buffer): void {
    for (const m of this.members) {
      if (!m.child.isConnected()) continue;
      m.dirty = true;
      this.post(m.child, { t: "cache", q: query, a: answer });
    }
  }

  async stop(): Promise<void> {
    this.stopping = true;
    for (const t of this.restartTimers) clearTimeout(t);
    this.restartTimers.clear();
    await Promise.all(
      [...this.members].map((m) => {
        m.child.process.kill("SIGTERM");
        const force = setTimeout(() => m.child.process.kill("SIGKILL"), STOP_TIMEOUT_MS);
        return m.exited.finally(() => clearTimeout(force));
      }),
    );
  }

  private flushOne(m: Member, g: number): Promise<void> {
    // A process whose channel is closed can no longer be told anything; it exits on its own (node:cluster children do).
    if (!m.child.isConnected()) return m.exited;
    // Clean, but an earlier flush may still be on its way: the caller must wait for that one too.
    if (!m.dirty) return m.lastFlush;
    m.dirty = false;
    m.lastFlush = new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.log.error({ child_pid: m.child.process.pid }, "dns answering process did not confirm a cache flush; killing it");
        m.child.process.kill("SIGKILL");
      }, FLUSH_TIMEOUT_MS);
      m.waiters.push({
        g,
        done: () => {
          clearTimeout(timer);
          resolve();
        },
      });
      this.post(m.child, { t: "flush", g });
    });
    return m.lastFlush;
  }

  private post(child: Worker, msg: ToAnsweringProcess): void {
    // A closed channel is handled by the exit that follows; the error itself needs no handling here.
    if (child.isConnected()) child.send(msg, undefined, undefined, () => {});
  }

  private spawn(): Promise<void> {
    cluster.setupPrimary({
      exec: ANSWERING_PROCESS_SCRIPT,
      args: [],
      execArgv: this.batchSends ? [...process.execArgv, BATCH_SENDS_FLAG] : process.execArgv,
      serialization: "advanced",
    });
    const child = cluster.fork({ [BIND_ENV]: JSON.stringify(this.bind) });
    const withFlag = this.batchSends;
    let ready = false;
    let exitedResolve!: () => void;
    const m: Member = {
      child,
      startedAt: Date.now(),
      exited: new Promise((r) => (exitedResolve = r)),
      waiters: [],
      dirty: false,
      lastFlush: Promise.resolve(),
    };
    this.members.add(m);

    return new Promise<void>((resolve, reject) => {
      let bindError: (Error & { code?: string }) | undefined;
      child.on("error", (err) => this.log.warn({ err, child_pid: child.process.pid }, "dns answering process channel error"));
      child.on("message", (msg: FromAnsweringProcess) => {
        switch (msg.t) {
          case "query": {
            const a = this.safeAnswer(msg.q, msg.from) ?? null;
            if (a && msg.from === undefined) m.dirty = true;
            this.post(child, { t: "answer", s: msg.s, a });
            break;
          }
          case "stats":
            this.stats(msg);
            break;
          case "counts":
            this.counted(msg.c);
            break;
          case "flushed": {
            const confirmed = m.waiters.filter((w) => w.g <= msg.g);
            m.waiters = m.waiters.filter((w) => w.g > msg.g);
            for (const w of confirmed) w.done();
            break;
          }
          case "ready":
            ready = true;
            this.log.info({ child_pid: child.process.pid, port: this.bind.port }, "dns answering process started");
            this.logPathOnce(msg.native);
            if (this.started) this.replaced();
            resolve();
            break;
          case "bind-error":
            bindError = Object.assign(new Error(msg.message), { code: msg.code });
            break;
        }
      });
      child.on("exit", (code, signal) => {
        this.members.delete(m);
        for (const w of m.waiters) w.done();
        m.waiters = [];
        exitedResolve();
        if (this.stopping) return;
        if (!ready && withFlag && code === BAD_OPTION_EXIT) {
          this.log.warn(`this Node refuses ${BATCH_SENDS_FLAG}; DNS answering processes send replies one by one`);
          this.batchSends = false;
          this.spawn().then(resolve, reject);
          return;
        }
        if (!ready) reject(bindError ?? new Error(`a DNS answering process exited before it was ready (code ${code}, signal ${signal})`));
        // At start a failure is the caller's to report; later the server keeps its full set of processes.
        if (!this.started) return;
        this.log.warn({ child_pid: child.process.pid, code, signal }, "dns answering process exited; starting another");
        this.restartLater(Date.now() - m.startedAt);
      });
    });
  }

  private logPathOnce(whyNotNative: string): void {
    if (this.pathLogged) return;
    this.pathLogged = true;
    if (whyNotNative) this.log.warn({ reason: whyNotNative }, "dns native UDP path unavailable; cached answers are sent from JavaScript");
    else this.log.info("dns answering processes send cached answers natively (src/dns/server/udp/native)");
  }

  private safeAnswer(query: Buffer, from?: string): Buffer | undefined {
    try {
      return this.answer(query, from);
    } catch (err) {
      this.log.warn({ err }, "dns udp query failed");
      return undefined;
    }
  }

  private restartLater(lived: number): void {
    this.restartDelay = lived >= STABLE_MS ? RESTART_MIN_MS : Math.min(this.restartDelay * 2, RESTART_MAX_MS);
    const t = setTimeout(() => {
      this.restartTimers.delete(t);
      // A restart that fails has logged and scheduled the next attempt in its exit handler.
      this.spawn().catch(() => {});
    }, this.restartDelay);
    this.restartTimers.add(t);
  }
}
