import type { Logger } from "../../core/logger.js";
import type { ScheduledOutcome } from "../runtime/entry-module.js";
import type { ScriptSchedule, WorkersStore } from "../store.js";
import { nextTick } from "./cron.js";

/** Runs one tick of a trigger on the script's live version; undefined when it does not run or has no scheduled(). */
export type RunTick = (schedule: ScriptSchedule, scheduledTime: number) => Promise<ScheduledOutcome | undefined>;

/** The longest the clock sleeps, so a wall clock set forward or back is noticed within this time. */
const MAX_SLEEP_MS = 30_000;

const keyOf = (s: ScriptSchedule) => JSON.stringify([s.accountId, s.script, s.cron]);

/**
 * Fires every cron trigger of the platform on time (UTC). Each trigger's next tick is computed from the time it
 * is loaded, so ticks missed while the platform was down are not replayed; each tick is claimed in the store before
 * it runs (`claimTick`), so a restart within a tick does not run it twice. One timer serves all triggers.
 * With several nodes on PostgreSQL every node runs this clock on the same triggers; the claim is one row update in
 * PostgreSQL, so each tick runs once across the nodes, on whichever claims it first (every node runs every script).
 */
export class CronClock {
  private readonly next = new Map<string, { schedule: ScriptSchedule; at: number }>();
  private timer?: NodeJS.Timeout;
  private stopped = false;
  private reloading: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: WorkersStore,
    private readonly runTick: RunTick,
    private readonly log: Logger,
  ) {}

  /** Loads every trigger and starts the clock. */
  start(): Promise<void> {
    return this.reload();
  }

  /**
   * Reads the triggers again after a change (a PUT of schedules, a script deleted). A trigger it had keeps its
   * next tick, so a reload at the moment of a tick does not skip it; a new one starts from now.
   */
  reload(): Promise<void> {
    const next = this.reloading.then(async () => {
      const all = await this.store.allSchedules();
      const now = Date.now();
      const keep = new Set(all.map(keyOf));
      for (const key of this.next.keys()) if (!keep.has(key)) this.next.delete(key);
      for (const schedule of all) {
        const key = keyOf(schedule);
        if (this.next.has(key)) continue;
        const at = nextTick(schedule.cron, new Date(now));
        if (at) this.next.set(key, { schedule, at: at.getTime() });
      }
      this.arm();
    });
    this.reloading = next.catch((err) => this.log.error({ err: (err as Error).message }, "could not load the cron triggers"));
    return next;
  }

  private arm(): void {
    clearTimeout(this.timer);
    if (this.stopped || this.next.size === 0) return;
    const soonest = Math.min(...[...this.next.values()].map((n) => n.at));
    this.timer = setTimeout(() => this.tick(), Math.min(Math.max(soonest - Date.now(), 0), MAX_SLEEP_MS));
    this.timer.unref?.();
  }

  private tick(): void {
    const now = Date.now();
    for (const entry of this.next.values()) {
      if (entry.at > now) continue;
      const tick = entry.at;
      const following = nextTick(entry.schedule.cron, new Date(tick));
      // A tick is run late only while it is still the latest one: once a later tick has passed too (the process
      // was stalled past it), the missed ones are logged, not replayed, and the clock goes on from now.
      if (following && following.getTime() <= now) {
        this.log.warn({ script: entry.schedule.script, cron: entry.schedule.cron, missed_from: new Date(tick).toISOString() }, "cron ticks missed");
      } else void this.fire(entry.schedule, tick);
      const after = nextTick(entry.schedule.cron, new Date(now));
      if (after) entry.at = after.getTime();
      else this.next.delete(keyOf(entry.schedule));
    }
    this.arm();
  }

  private async fire(schedule: ScriptSchedule, tick: number): Promise<void> {
    const tag = { script: schedule.script, cron: schedule.cron, scheduled_time: new Date(tick).toISOString() };
    try {
      if (!(await this.store.claimTick(schedule, tick))) return this.log.debug(tag, "cron tick already claimed (by another node, or before a restart)");
      const result = await this.runTick(schedule, tick);
      if (!result) this.log.warn(tag, "cron trigger skipped: the Worker is not running or has no scheduled() handler");
      else if (result.outcome === "ok") this.log.info(tag, "cron trigger ran");
      else this.log.warn({ ...tag, outcome: result.outcome }, "cron trigger threw an exception");
    } catch (err) {
      this.log.error({ ...tag, err: (err as Error).message }, "cron trigger failed");
    }
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }
}
