import { randomBytes } from "node:crypto";
import pg from "pg";
import type { Postgres, Transaction } from "../db/postgres.js";
import type { Logger } from "../logger.js";

/** Something another node changed (or this one): which area, and what in it, never the data itself. */
export interface ChangeEvent {
  type: "change";
  area: string;
  /** What changed, as the area names it (e.g. "tokens", "zone:<id>"); subscribers reload it. */
  what: string;
  /** The node that made the change (`ServiceContext.nodeId`). */
  origin: string;
}

/** Notices may have been missed (the bus's connection was lost): reload everything cached. */
export interface ResyncEvent {
  type: "resync";
}

export type BusEvent = ChangeEvent | ResyncEvent;

/** A subscriber: returns the promise of its work when it applies a notice asynchronously (Bus.barrier waits for it). */
export type BusHandler = (event: BusEvent) => unknown;

/**
 * Change notifications between the nodes of a platform, so each keeps what it caches (credentials, DNS answers,
 * worker versions, gateway settings) fresh. A subscriber receives every change of its area, its own node's
 * included (`origin` tells them apart), and a `resync` whenever notices may have been lost.
 */
export interface Bus {
  readonly nodeId: string;
  /**
   * Announces a change. Given the transaction that makes it, the notice goes out when (and only if) that
   * transaction commits; otherwise at once, so call it after the change committed.
   */
  publish(area: string, what: string, tx?: Transaction): Promise<void>;
  /**
   * Calls `handler` for the area's changes and for every resync; returns the unsubscribe function. A handler that
   * applies the notice asynchronously (reads the store again) returns that work's promise, so `barrier` waits for it.
   */
  subscribe(area: string, handler: BusHandler): () => void;
  /**
   * Resolves once this node has received every notice committed before the call and its handlers' work on them is
   * done: what the node keeps in memory is then at least as new as the store was at the call (read-your-writes for a
   * client whose earlier write went through another node). Bounded: gives up after a few seconds, or at once while
   * notices cannot arrive (the node resyncs when they can again), and the caller answers from what it has.
   */
  barrier(): Promise<void>;
  /**
   * For a bus carried by PostgreSQL: the `pg_notify(channel, payload)` arguments that announce a change, for a
   * statement (a database function) that makes the change and announces it in one round trip. Undefined when the
   * bus is not PostgreSQL's: publish after the commit instead.
   */
  sqlNotice?(area: string, what: string): { channel: string; payload: string };
  close(): Promise<void>;
  /** For a bus between nodes: what the node's metrics read of it (core/metrics/cluster.ts). */
  readonly observed?: BusObservations;
}

/** What a bus between nodes counts: its reconnections, and each notice's delay from publish to receipt. */
export interface BusObservations {
  /** Times the listening connection was opened again after being lost. */
  reconnects: number;
  /** Called with each received notice's area and its delay (the publisher's clock against this node's). */
  onNotice?: (area: string, seconds: number) => void;
}

/** The one PostgreSQL channel every node listens on. */
export const BUS_CHANNEL = "edge_changes";
/** PostgreSQL refuses NOTIFY payloads of 8000 bytes or more. */
const MAX_PAYLOAD_BYTES = 7_900;

/** The longest a request waits at a barrier, for its marker and then for the work the notices before it started. */
const BARRIER_MS = 3_000;
/** A sent marker not back after this long means the listening connection died without a word: it is opened again. */
const MARKER_LOST_MS = 30_000;
/** At most one warning this often that requests answered without waiting for their barrier. */
const BARRIER_WARNING_MS = 60_000;

/** `work` or, after `ms`, undefined with `late()` called: a request's bound on a barrier. */
function within(work: Promise<void>, ms: number, late: () => void): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      late();
      resolve();
    }, ms);
    timer.unref();
  });
  return Promise.race([work, bound]).finally(() => clearTimeout(timer));
}

/** Subscribers by area; shared by both buses. */
class Subscribers {
  private readonly byArea = new Map<string, Set<BusHandler>>();
  /** Notices delivered so far: each is numbered in order of delivery. */
  private delivered = 0;
  /** The handlers' work not finished yet, each with the number of the notice that started it. */
  private readonly applying = new Map<Promise<unknown>, number>();

  constructor(private readonly log?: Logger) {}

  /** The number of the last notice delivered. */
  get last(): number {
    return this.delivered;
  }

  /**
   * Resolves when the work started by the notices numbered up to `upTo` is done (failed work included): not the work
   * of later notices, which a request that came before them need not wait for. Undefined when none is running.
   */
  appliedUpTo(upTo: number): Promise<void> | undefined {
    const work: Promise<unknown>[] = [];
    for (const [promise, n] of this.applying) if (n <= upTo) work.push(promise);
    return work.length === 0 ? undefined : Promise.all(work).then(() => undefined);
  }

  add(area: string, handler: BusHandler): () => void {
    let set = this.byArea.get(area);
    if (!set) this.byArea.set(area, (set = new Set()));
    set.add(handler);
    return () => set.delete(handler);
  }

  deliver(event: BusEvent): void {
    const n = ++this.delivered;
    const targets = event.type === "change" ? [this.byArea.get(event.area) ?? []] : [...this.byArea.values()];
    for (const set of targets) {
      for (const handler of set) {
        try {
          const work = handler(event);
          if (work instanceof Promise) {
            const tracked: Promise<unknown> = work.then(
              () => this.applying.delete(tracked),
              () => this.applying.delete(tracked),
            );
            this.applying.set(tracked, n);
          }
        } catch (err) {
          this.log?.error({ err, event }, "a bus subscriber failed");
        }
      }
    }
  }
}

/** The embedded platform's bus: one node, so a change is delivered in-process, at once. */
export class LocalBus implements Bus {
  private readonly subscribers: Subscribers;

  constructor(
    readonly nodeId: string,
    log?: Logger,
  ) {
    this.subscribers = new Subscribers(log);
  }

  async publish(area: string, what: string): Promise<void> {
    this.subscribers.deliver({ type: "change", area, what, origin: this.nodeId });
  }

  subscribe(area: string, handler: BusHandler): () => void {
    return this.subscribers.add(area, handler);
  }

  /**
   * One node: every notice was delivered when it was published; only the work it started may still run. Nothing
   * running (the usual case): no bound's timer is armed, for a call every zone-naming API request makes.
   */
  barrier(): Promise<void> {
    const work = this.subscribers.appliedUpTo(this.subscribers.last);
    return work === undefined ? Promise.resolve() : within(work, BARRIER_MS, () => undefined);
  }

  async close(): Promise<void> {}
}

export interface PostgresBusOptions {
  /** Where to open the listening connection (the pool's URL). */
  url: string;
  nodeId: string;
  log?: Logger;
  /** First and longest pause between reconnection attempts. */
  backoffMs?: { first: number; max: number };
}

/**
 * The bus between nodes: PostgreSQL LISTEN/NOTIFY on channel `edge_changes`. Each node keeps one connection of its
 * own (outside the pool) that listens; notices are published with `pg_notify` on any connection, inside the
 * change's transaction when there is one (PostgreSQL delivers them at commit, and drops them on rollback). When
 * the listening connection is lost, it is opened again with growing pauses, and every subscriber gets a `resync`:
 * notices sent meanwhile are lost for good.
 */
export class PostgresBus implements Bus {
  readonly nodeId: string;
  private readonly subscribers: Subscribers;
  private client: pg.Client | undefined;
  private closed = false;
  private retry: NodeJS.Timeout | undefined;
  private failures = 0;
  private listening: Promise<void> | undefined;
  readonly observed: BusObservations = { reconnects: 0 };
  /**
   * Barriers whose marker was sent, by the marker's token: called with the number of the last notice delivered
   * before it when it comes back, with undefined when it never will (lost, or the bus closed).
   */
  private readonly markers = new Map<string, (lastBefore: number | undefined) => void>();
  /** Ends the current listening connection as lost (reconnect, resync); set while one is listening. */
  private dropListening: ((err: Error) => void) | undefined;
  private lastBarrierWarning = 0;
  /** The barrier that callers join until its marker is sent: a marker sent after a call covers it, one before does not. */
  private nextBarrier: Promise<void> | undefined;
  /** The marker being sent: the next one waits for it, so at most one is sent at a time however many requests wait. */
  private sendingMarker: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly pg: Postgres,
    private readonly opts: PostgresBusOptions,
  ) {
    this.nodeId = opts.nodeId;
    this.subscribers = new Subscribers(opts.log);
  }

  /** Opens the listening connection; rejects when PostgreSQL cannot be reached now (the node then refuses to start). */
  start(): Promise<void> {
    this.listening ??= this.listen();
    return this.listening;
  }

  /** Whether the listening connection is up (for /healthz). */
  get connected(): boolean {
    return this.client !== undefined;
  }

  private async listen(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.opts.url,
      connectionTimeoutMillis: 2_000,
      keepAlive: true,
      application_name: `edge-bus ${this.nodeId}`,
    });
    // Only a connection that was listening is "lost"; a failed attempt is retried by scheduleReconnect's caller.
    let established = false;
    let lost = false;
    const onLost = (err?: Error) => {
      if (!established || lost) return;
      lost = true;
      if (this.client === client) this.client = undefined;
      if (this.dropListening === onLost) this.dropListening = undefined;
      // Notices sent meanwhile are lost, the barriers' markers too: their requests answer now (a resync follows).
      for (const resolve of this.markers.values()) resolve(undefined);
      this.markers.clear();
      client.end().catch(() => {});
      if (this.closed) return;
      this.opts.log?.warn({ err }, "lost the PostgreSQL connection change notices arrive on; reconnecting");
      this.scheduleReconnect();
    };
    client.on("error", onLost);
    client.on("end", () => onLost());
    client.on("notification", (n) => this.onNotification(n.payload));
    try {
      await client.connect();
      await client.query(`LISTEN ${BUS_CHANNEL}`);
    } catch (err) {
      client.end().catch(() => {});
      throw err;
    }
    if (this.closed) {
      await client.end().catch(() => {});
      return;
    }
    established = true;
    this.client = client;
    this.dropListening = onLost;
  }

  private scheduleReconnect(): void {
    const { first, max } = this.opts.backoffMs ?? { first: 100, max: 5_000 };
    const pause = Math.min(max, first * 2 ** Math.min(this.failures, 16));
    this.retry = setTimeout(() => {
      this.retry = undefined;
      this.listen().then(
        () => {
          if (this.closed) return;
          this.failures = 0;
          this.observed.reconnects++;
          this.opts.log?.info("change notices flow again; every cache reloads");
          this.subscribers.deliver({ type: "resync" });
        },
        (err: unknown) => {
          this.failures++;
          this.opts.log?.debug({ err }, "reconnecting the change notices failed; trying again");
          if (!this.closed) this.scheduleReconnect();
        },
      );
    }, pause);
  }

  private onNotification(payload: string | undefined): void {
    let event: ChangeEvent;
    try {
      const p = JSON.parse(payload ?? "") as { a?: unknown; w?: unknown; o?: unknown; t?: unknown; b?: unknown };
      // A barrier's marker: this node's comes back to it; the other nodes' are not for it.
      if (typeof p.b === "string") {
        if (p.o === this.nodeId) this.markers.get(p.b)?.(this.subscribers.last);
        return;
      }
      if (typeof p.a !== "string" || typeof p.w !== "string" || typeof p.o !== "string") throw new Error("not a change notice");
      event = { type: "change", area: p.a, what: p.w, origin: p.o };
      // `t`: when the notice was made (ms since the epoch), absent from notices of older nodes.
      if (typeof p.t === "number" && this.observed.onNotice) this.observed.onNotice(p.a, Math.max(0, Date.now() - p.t) / 1000);
    } catch (err) {
      this.opts.log?.warn({ err }, "ignored a malformed change notice");
      return;
    }
    this.subscribers.deliver(event);
  }

  async publish(area: string, what: string, tx?: Transaction): Promise<void> {
    const { channel, payload } = this.sqlNotice(area, what);
    await (tx ?? this.pg).execute("SELECT pg_notify($1, $2)", [channel, payload]);
  }

  sqlNotice(area: string, what: string): { channel: string; payload: string } {
    const payload = JSON.stringify({ a: area, w: what, o: this.nodeId, t: Date.now() });
    if (Buffer.byteLength(payload) > MAX_PAYLOAD_BYTES)
      throw new Error(`change notice too large (${Buffer.byteLength(payload)} bytes): name what changed, not the data`);
    return { channel: BUS_CHANNEL, payload };
  }

  subscribe(area: string, handler: BusHandler): () => void {
    return this.subscribers.add(area, handler);
  }

  /**
   * A marker notice from this node, and the wait until it comes back: PostgreSQL delivers notices in the order their
   * transactions committed, so every notice committed before the marker has been delivered by then; then the work
   * those notices started (not later ones'). Callers who arrive before the marker is sent share it. Each caller
   * waits at most BARRIER_MS from its call, the marker's sending included.
   */
  barrier(): Promise<void> {
    if (!this.client) return Promise.resolve();
    return within((this.nextBarrier ??= this.runBarrier()), BARRIER_MS, () => this.barrierLate());
  }

  private async runBarrier(): Promise<void> {
    // One marker is sent at a time; callers who come meanwhile share the next one, sent once this one is.
    await this.sendingMarker;
    this.nextBarrier = undefined;
    // The connection that must bring the marker back is the one listening now: a marker sent while none listens
    // (lost meanwhile, a resync to come) would never come back, and could not be blamed on the next one.
    const listening = this.dropListening;
    if (!this.client || this.closed || !listening) return;
    const token = randomBytes(8).toString("hex");
    const heard = new Promise<number | undefined>((resolve) => this.markers.set(token, resolve));
    const sent = this.sendMarker(token);
    this.sendingMarker = sent.catch(() => undefined);
    try {
      await sent;
    } catch (err) {
      // PostgreSQL unreachable: the request answers from memory, as reads do then (the node resyncs when it is back).
      this.markers.delete(token);
      this.opts.log?.debug({ err }, "could not send a barrier's marker");
      return;
    }
    // Dropped if the marker never comes back (only that connection: a later one's own onLost is another function).
    const lost = setTimeout(() => {
      const resolve = this.markers.get(token);
      if (!resolve) return;
      this.markers.delete(token);
      resolve(undefined);
      listening?.(new Error(`a barrier's marker did not come back in ${MARKER_LOST_MS / 1000} s`));
    }, MARKER_LOST_MS);
    lost.unref();
    const lastBefore = await heard;
    clearTimeout(lost);
    this.markers.delete(token);
    if (lastBefore !== undefined) await this.subscribers.appliedUpTo(lastBefore);
  }

  private barrierLate(): void {
    const now = Date.now();
    if (now - this.lastBarrierWarning < BARRIER_WARNING_MS) return;
    this.lastBarrierWarning = now;
    this.opts.log?.warn(
      { ms: BARRIER_MS },
      "API reads waited their longest for the change notices sent before them and answered from what this node has (said once a minute at most)",
    );
  }

  /**
   * One statement, so one round trip: its transaction commits without waiting for the WAL flush (set_config local to
   * it), as nothing is written that a crash could lose but the marker, which only its waiting requests need.
   */
  private async sendMarker(token: string): Promise<void> {
    const payload = JSON.stringify({ b: token, o: this.nodeId });
    await this.pg.execute("SELECT set_config('synchronous_commit', 'off', true), pg_notify($1, $2)", [BUS_CHANNEL, payload]);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const resolve of this.markers.values()) resolve(undefined);
    this.markers.clear();
    if (this.retry) clearTimeout(this.retry);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => {});
  }
}
