import { chmodSync, closeSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import type { Bus, BusEvent } from "../../core/cluster/bus.js";
import type { Logger } from "../../core/logger.js";
import type { HttpRequestEvent } from "../analytics/http-requests.js";
import type { EdgeRequestCounter } from "../metrics.js";
import type { FromThread, OpenConnections, ThreadStart, ToThread } from "./messages.js";
import { duplicateListenFd, requireListenFdSupport } from "../../core/os/os.js";
import { parseProxyLine, PROXY_LINE_MAX, type ConnectionAddresses } from "./proxy-header.js";

/** How long the API waits for every thread to apply a change (those that did not then serve nothing themselves until they have). */
const SYNC_MS = 2_000;
/** A thread behind the notices that applies none for this long is ended and started again. */
const WEDGED_MS = 60_000;
const WEDGED_CHECK_MS = 5_000;
/** A thread that exits is started again after this long, doubling to RESPAWN_MAX_MS while it keeps exiting. */
const RESPAWN_MS = 1_000;
const RESPAWN_MAX_MS = 30_000;
/** A thread that exits this often within a minute is left down (logged as an error): the others and the main thread serve. */
const EXITS_PER_MINUTE = 5;
/** How long a stop waits for the threads to finish their requests. */
const STOP_MS = 8_000;
/** How long a handed-over connection has to send its PROXY line. */
const PROXY_LINE_WAIT_MS = 5_000;

interface LiveThread {
  index: number;
  worker: Worker;
  ready: boolean;
  /** The last notice it applied. */
  applied: number;
  exits: number[];
  delay: number;
  /** Since when it has been behind with `applied` unchanged (the wedge watch). */
  behindSince?: number;
  appliedAtCheck?: number;
}

/**
 * The edge threads (`--edge-threads`): event loops beside the main thread that accept on the edge port's listening
 * socket too, so that the proxy and the cache use more than one CPU. Each thread reads the tenant state (zones,
 * settings, Cache Rules, Workers' routes) from the embedded state and keeps it current with the notices this class
 * relays from the node's bus, numbered; `synced()` resolves once every thread has applied every notice relayed
 * before the call (the API waits for it, so a change is served by every thread once its call returns). Connections a
 * thread does not serve come to `connection` through a Unix socket of this process's own, after a PROXY line.
 */
export class EdgeThreads {
  private readonly threads = new Map<number, LiveThread>();
  /** The number of the last notice relayed, shared with every thread (ThreadStart.relayed). */
  private readonly relayed = new Int32Array(new SharedArrayBuffer(4));
  private wedgedTimer?: NodeJS.Timeout;
  /** Each thread's open connections, as it last said (within a second). */
  private readonly open = new Map<number, OpenConnections>();
  private sent = 0;
  private readonly waiters: { upTo: number; resolve: () => void }[] = [];
  private readonly unsubscribe: (() => void)[] = [];
  private handover?: Server;
  private dir?: string;
  private stopping = false;
  private draining?: Promise<void>;

  constructor(
    private readonly opts: {
      /** The thread's entry (src/edge-thread.ts, built beside platform.js and in the bundle's directory). */
      script: string;
      /** Loops serving the edge port, the main thread's included: loops - 1 threads are started. */
      loops: number;
      bus: Bus;
      /** The bus areas the threads' state follows. */
      areas: readonly string[];
      stateDir: string;
      options: ReadonlyMap<string, unknown>;
      log: Logger;
      /** Tenants' requests the threads served, for the analytics. */
      traffic: (event: HttpRequestEvent) => void;
      /** The edge's request metrics, which count the threads' requests too. */
      requests?: EdgeRequestCounter;
      /** Serves a connection handed over by a thread as one the edge port accepted, from these addresses. */
      connection: (socket: Socket) => void;
    },
  ) {}

  /** Starts the threads on the edge port's listening socket; resolves once every one of them accepts. */
  async start(fd: number): Promise<void> {
    // Before anything: without the native part no thread can have a descriptor of its own (UserError).
    requireListenFdSupport();
    // In the state directory (mode 0700) when the path fits a Unix socket's 107 bytes, else a private temp directory.
    const inState = join(this.opts.stateDir, "run");
    const fits = Buffer.byteLength(join(inState, "edge-threads-XXXXXX", "handover.sock")) <= 107;
    if (fits) {
      mkdirSync(inState, { recursive: true, mode: 0o700 });
      // Left by a run that was killed: the state directory is this process's alone (core/server/state-lock.ts).
      for (const name of readdirSync(inState)) if (name.startsWith("edge-threads-")) rmSync(join(inState, name), { recursive: true, force: true });
    }
    this.dir = mkdtempSync(join(fits ? inState : tmpdir(), "edge-threads-"));
    const path = join(this.dir, "handover.sock");
    const handover = (this.handover = createServer((socket) => this.handedOver(socket)));
    await new Promise<void>((resolve, reject) => {
      handover.once("error", reject);
      handover.listen(path, () => {
        handover.removeListener("error", reject);
        resolve();
      });
    });
    // The directory (0700) already keeps other users out; the socket says so too.
    chmodSync(path, 0o600);
    handover.on("error", (err) => this.opts.log.error({ err }, "the edge threads' handover socket failed"));
    for (const area of this.opts.areas)
      this.unsubscribe.push(
        this.opts.bus.subscribe(area, (event) => {
          // One resync reaches every area's subscriber: relayed once.
          if (event.type === "resync" && area !== this.opts.areas[0]) return;
          this.relay(event);
        }),
      );
    const started: Promise<void>[] = [];
    for (let index = 1; index < this.opts.loops; index++) started.push(this.spawn(index, fd, path));
    await Promise.all(started);
    this.wedgedTimer = setInterval(() => this.watch(), WEDGED_CHECK_MS);
    this.wedgedTimer.unref();
  }

  /** The connections the threads serve now (as they said within the last second). */
  get openConnections(): OpenConnections {
    let plain = 0;
    let tls = 0;
    for (const o of this.open.values()) {
      plain += o.plain;
      tls += o.tls;
    }
    return { plain, tls };
  }

  /**
   * Resolves once every thread has applied every notice relayed so far, or after SYNC_MS. A thread that has not yet
   * serves nothing itself meanwhile (it compares the shared count of relayed notices with what it applied, and hands
   * every request to this thread until it caught up), so the answer never outruns what is served. One that makes no
   * progress for WEDGED_MS is ended and started again (`watch`).
   */
  synced(): Promise<void> {
    const upTo = this.sent;
    if (this.lagging(upTo).length === 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const waiter = { upTo, resolve };
      this.waiters.push(waiter);
      const timer = setTimeout(() => {
        const late = this.lagging(upTo);
        if (late.length > 0)
          this.opts.log.warn(
            { threads: late.map((t) => t.index), notice: upTo },
            "edge threads had not applied a change in time: they hand their requests to the main thread until they have",
          );
        this.release(waiter);
      }, SYNC_MS);
      timer.unref();
      const release = waiter.resolve;
      waiter.resolve = () => {
        clearTimeout(timer);
        release();
      };
    });
  }

  /**
   * The first half of a stop: the threads accept nothing more and finish what they serve (bounded), while they still
   * apply every change (the main thread's API finishes its calls meanwhile). `stop` then ends them.
   */
  drain(): Promise<void> {
    if (this.draining) return this.draining;
    this.stopping = true;
    clearInterval(this.wedgedTimer);
    const drained = [...this.threads.values()].map(
      (t) =>
        new Promise<void>((resolve) => {
          const done = (message: FromThread) => {
            if (message.type !== "drained") return;
            t.worker.off("message", done);
            resolve();
          };
          t.worker.on("message", done);
          t.worker.once("exit", () => resolve());
          t.worker.postMessage({ type: "drain" } satisfies ToThread);
          setTimeout(resolve, STOP_MS).unref();
        }),
    );
    return (this.draining = Promise.all(drained).then(() => undefined));
  }

  /** Once nothing more can change (the API closed): the threads close their caches, leave their markers and end. */
  async stop(): Promise<void> {
    await this.drain();
    for (const off of this.unsubscribe) off();
    const exits = [...this.threads.values()].map(
      (t) =>
        new Promise<void>((resolve) => {
          t.worker.once("exit", () => resolve());
          t.worker.postMessage({ type: "stop" } satisfies ToThread);
          setTimeout(() => void t.worker.terminate(), STOP_MS).unref();
        }),
    );
    await Promise.all(exits);
    for (const w of this.waiters.splice(0)) w.resolve();
    await new Promise<void>((resolve) => (this.handover ? this.handover.close(() => resolve()) : resolve()));
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
  }

  private relay(event: BusEvent): void {
    const n = ++this.sent;
    // Counted before it is sent: from now on no thread behind it answers anything itself (wraps after 2^31; the
    // threads compare in 32-bit arithmetic).
    Atomics.store(this.relayed, 0, n | 0);
    for (const t of this.threads.values()) t.worker.postMessage({ type: "notice", n, event } satisfies ToThread);
  }

  private lagging(upTo: number): LiveThread[] {
    return [...this.threads.values()].filter((t) => t.applied < upTo);
  }

  private release(waiter: { upTo: number; resolve: () => void }): void {
    const i = this.waiters.indexOf(waiter);
    if (i !== -1) this.waiters.splice(i, 1);
    waiter.resolve();
  }

  /** Starts a thread again after it exited; a failure (no descriptor left, no memory for a thread) is retried later. */
  private respawn(index: number, fd: number, handoverPath: string, previous: LiveThread): void {
    const timer = setTimeout(() => {
      if (this.stopping) return;
      try {
        void this.spawn(index, fd, handoverPath, { ...previous, delay: Math.min(previous.delay * 2, RESPAWN_MAX_MS) });
      } catch (err) {
        this.opts.log.error({ err, edgeThread: index }, "edge thread could not be started again: retried later");
        this.respawn(index, fd, handoverPath, { ...previous, delay: Math.min(previous.delay * 2, RESPAWN_MAX_MS) });
      }
    }, previous.delay);
    timer.unref();
  }

  /**
   * Every few seconds: a thread that has had a notice to apply for WEDGED_MS and applied nothing meanwhile is stuck
   * (its loop blocked, or its work never settling). It serves nothing itself all that time (`synced`); it is ended
   * and started again.
   */
  private watch(): void {
    const now = Date.now();
    for (const t of this.threads.values()) {
      // One still reading its state (a large zone may take long) is not wedged.
      if (!t.ready || t.applied >= this.sent) t.behindSince = undefined;
      else if (t.behindSince === undefined || t.appliedAtCheck !== t.applied) {
        t.behindSince = now;
        t.appliedAtCheck = t.applied;
      } else if (now - t.behindSince >= WEDGED_MS) {
        this.opts.log.error({ edgeThread: t.index, applied: t.applied, relayed: this.sent }, "edge thread applied no change for a minute: restarted");
        t.behindSince = undefined;
        void t.worker.terminate();
      }
    }
  }

  private spawn(index: number, fd: number, handoverPath: string, previous?: LiveThread): Promise<void> {
    // A descriptor of the thread's own: Node closes it when the thread ends, never the one the others accept on.
    const threadFd = duplicateListenFd(fd);
    let worker: Worker;
    const start: ThreadStart = {
      index,
      loops: this.opts.loops,
      nodeId: `${this.opts.bus.nodeId}/edge-thread-${index}`,
      stateDir: this.opts.stateDir,
      options: new Map(this.opts.options),
      fd: threadFd,
      handoverPath,
      restarted: previous !== undefined,
      relayed: this.relayed,
      startAt: this.sent,
    };
    try {
      worker = new Worker(this.opts.script, { workerData: start });
    } catch (err) {
      closeSync(threadFd);
      throw err;
    }
    // Everything relayed before this thread exists is in what it reads.
    const thread: LiveThread = { index, worker, ready: false, applied: this.sent, exits: previous?.exits ?? [], delay: previous?.delay ?? RESPAWN_MS };
    this.threads.set(index, thread);
    return new Promise<void>((resolve) => {
      worker.on("message", (message: FromThread) => {
        if (message.type === "ready") {
          thread.ready = true;
          thread.delay = RESPAWN_MS;
          resolve();
        } else if (message.type === "applied") {
          thread.applied = message.n;
          for (const w of [...this.waiters]) if (this.lagging(w.upTo).length === 0) this.release(w);
        } else if (message.type === "traffic") {
          this.open.set(index, message.open);
          for (const event of message.events) this.opts.traffic(event);
          const requests = this.opts.requests;
          if (requests) for (const r of message.requests) requests.record(...r);
        }
      });
      worker.on("error", (err) => this.opts.log.error({ err, edgeThread: index }, "edge thread failed"));
      worker.on("exit", (code) => {
        this.threads.delete(index);
        this.open.delete(index);
        // Its notices no longer hold anyone up.
        for (const w of [...this.waiters]) if (this.lagging(w.upTo).length === 0) this.release(w);
        resolve();
        if (this.stopping) return;
        const now = Date.now();
        thread.exits = [...thread.exits.filter((t) => now - t < 60_000), now];
        if (thread.exits.length >= EXITS_PER_MINUTE) {
          this.opts.log.error({ edgeThread: index, code }, "edge thread keeps exiting: left down, the other loops serve");
          return;
        }
        this.opts.log.error({ edgeThread: index, code, restartInMs: thread.delay }, "edge thread exited: started again");
        this.respawn(index, fd, handoverPath, thread);
      });
    });
  }

  /** A connection a thread hands over: its PROXY line, then it is the edge port's, from the client's addresses. */
  private handedOver(socket: Socket): void {
    let seen: Buffer = Buffer.alloc(0);
    const timer = setTimeout(() => socket.destroy(), PROXY_LINE_WAIT_MS);
    const onData = (chunk: Buffer) => {
      seen = seen.length === 0 ? chunk : Buffer.concat([seen, chunk]);
      const end = seen.indexOf("\r\n");
      if (end === -1) {
        if (seen.length > PROXY_LINE_MAX) socket.destroy();
        return;
      }
      clearTimeout(timer);
      socket.removeListener("data", onData);
      const addresses = parseProxyLine(seen.toString("latin1", 0, end));
      if (!addresses) return void socket.destroy();
      asAccepted(socket, addresses);
      this.opts.connection(socket);
      const rest = seen.subarray(end + 2);
      // Node's parser reads the socket from now on; what was read here goes to it first, in this same turn.
      if (rest.length > 0) socket.emit("data", rest);
    };
    socket.on("data", onData);
    socket.on("error", () => socket.destroy());
  }
}

/** The socket answers for the client's connection: its addresses are the ones the thread accepted it from. */
function asAccepted(socket: Socket, a: ConnectionAddresses): void {
  const family = a.remoteAddress.includes(":") ? "IPv6" : "IPv4";
  Object.defineProperties(socket, {
    remoteAddress: { value: a.remoteAddress },
    remotePort: { value: a.remotePort },
    remoteFamily: { value: family },
    localAddress: { value: a.localAddress },
    localPort: { value: a.localPort },
  });
}
