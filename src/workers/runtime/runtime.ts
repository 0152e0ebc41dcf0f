import { rmSync } from "node:fs";
import type { IncomingHttpHeaders } from "node:http";
import { join } from "node:path";
import type { Logger } from "../../core/logger.js";
import type { RuntimeDurableObjects } from "../durable-objects/workerd.js";
import type { BindingBackendName } from "../bindings/binding-type.js";
import { BindingServer, type BindingHandler, type BindingTunnelHandler, type BindingUpgradeHandler } from "../bindings/server.js";
import type { ModuleSource, ScriptRecord } from "../store.js";
import type { ScheduledOutcome } from "./entry-module.js";
import { ScriptRuntime } from "./script-runtime.js";
import { SocketDir } from "./socket-dir.js";
import { versionKeyPoint } from "./version-key.js";
import { versionOverride } from "./version-override.js";
import { probeWorkerd, type WorkerdBinary } from "./workerd-binary.js";
import { WorkerdLeash } from "./workerd-leash.js";

/** A script with everything workerd needs: its modules' bytes and its secrets' values. */
export interface RunnableScript {
  script: ScriptRecord;
  modules: ModuleSource[];
  secrets: { name: string; text: string }[];
  /** Its Durable Object namespaces and their storage, when it has any. */
  durableObjects?: RuntimeDurableObjects;
  /** It consumes a queue: its process runs the queue dispatcher, and so workerd's experimental features (queue-dispatch.ts). */
  queueConsumer?: boolean;
}

/** The second version of a gradual deployment: its own workerd, and the share of the script's traffic it takes. */
interface SplitLane {
  rt: ScriptRuntime;
  percentage: number;
}

/**
 * All running scripts, by name (names are unique platform-wide), and the binding server they call. A script runs one
 * version, or two during a gradual deployment: each on a workerd of its own (a ScriptRuntime), and every invocation
 * (`pick`) goes to one of them, chosen by its share or by the request's version override.
 */
export class WorkersRuntime {
  /** Each script's primary version (the one its record shows: handlers, account, assets). */
  private readonly runtimes = new Map<string, ScriptRuntime>();
  /** The second version of the scripts that run a gradual deployment. */
  private readonly splits = new Map<string, SplitLane>();
  /** Numbers the directories of the runtimes a split starts, so that none shares another's. */
  private laneSeq = 0;
  readonly bindings: BindingServer;
  private sockets?: SocketDir;
  private binary?: WorkerdBinary;
  private leash?: WorkerdLeash;

  constructor(
    handlers: ReadonlyMap<BindingBackendName, BindingHandler>,
    /** Where generated configs go: <state>/workers-run, removed at start and stop (it holds secrets). */
    private readonly runDir: string,
    private readonly log: Logger,
    /** The workerd executable that runs every script. */
    private readonly workerdPath: string,
    /** The backends that take CONNECT tunnels (service bindings' RPC sessions). */
    tunnels?: ReadonlyMap<BindingBackendName, BindingTunnelHandler>,
    /** The share of a script's invocations its tail worker reports (tail/hub.ts); 0: its workerd runs none. */
    private readonly tailRateNow: (name: string) => number = () => 0,
  ) {
    this.bindings = new BindingServer(handlers, log, tunnels);
  }

  /** The account and version of a script's live version, when it runs here. */
  liveVersion(name: string): { accountId: string; versionId: string } | undefined {
    const rt = this.lookup(name);
    return rt?.accountId && rt.versionId ? { accountId: rt.accountId, versionId: rt.versionId } : undefined;
  }

  /** Serves a binding backend made after the runtime (one that needs the runtime itself: assets, service bindings). */
  mountBinding(backend: BindingBackendName, handler: BindingHandler, tunnel?: BindingTunnelHandler, upgrade?: BindingUpgradeHandler): void {
    this.bindings.mount(backend, handler, tunnel, upgrade);
  }

  /**
   * Finds workerd and starts the binding server; scripts are deployed after it. First it ends any workerd a
   * platform killed outright left running on this state directory.
   */
  async start(): Promise<void> {
    this.binary = await probeWorkerd(this.workerdPath);
    this.log.info({ workerd: this.binary.path, newest_compatibility_date: this.binary.newestCompatibilityDate }, "workerd found");
    const pidDir = join(this.runDir, "_pids");
    await WorkerdLeash.endStrays(pidDir, this.log);
    rmSync(this.runDir, { recursive: true, force: true });
    this.leash = WorkerdLeash.create(pidDir, this.log);
    this.sockets = new SocketDir(this.runDir);
    await this.bindings.start(this.sockets.next("bindings"));
    this.log.info({ address: this.bindings.listenAddress }, "worker binding server listening");
  }

  /** A runtime for script `name`, its files in `<run dir>/<name>` (or `<name>.<n>` for the runtimes a split starts; names have no dot). */
  private newRuntime(name: string, lane?: number): ScriptRuntime {
    if (!this.sockets || !this.binary || !this.leash) throw new Error("workers runtime is not started");
    return new ScriptRuntime(name, {
      dir: join(this.runDir, lane === undefined ? name : `${name}.${lane}`),
      log: this.log,
      sockets: this.sockets,
      workerd: this.binary,
      leash: this.leash,
      bindingTarget: (call) => this.bindings.target(call),
      tailRate: () => this.tailRateNow(name),
    });
  }

  /** Checks that `run` starts, on a workerd that takes no traffic and stops at once; answers its handlers or rejects with workerd's error. */
  async check(run: RunnableScript): Promise<readonly string[]> {
    const running = this.runtimes.get(run.script.name);
    // Checks of a running script take turns with its deploys; a script that does not run here gets a runtime for the check only.
    const rt = running ?? this.newRuntime(run.script.name);
    try {
      return await rt.check(run);
    } finally {
      if (!running) await rt.stop();
    }
  }

  /**
   * Runs `run` as the live version of its script, and `second` beside it with its share of the traffic (a gradual
   * deployment), or alone; rejects with workerd's error if one cannot start, leaving what ran before.
   */
  async deploy(run: RunnableScript, second?: { run: RunnableScript; percentage: number }): Promise<void> {
    if (!second && !this.splits.has(run.script.name)) return this.deploySingle(run);
    return this.deploySplit(run, second);
  }

  /** A deploy with no split before or after: the new version starts beside the old one on the same runtime and takes over. */
  private async deploySingle(run: RunnableScript): Promise<void> {
    const name = run.script.name;
    let rt = this.runtimes.get(name);
    const fresh = !rt;
    if (!rt) {
      rt = this.newRuntime(name);
      this.runtimes.set(name, rt);
    }
    try {
      await rt.deploy(run);
    } catch (err) {
      if (fresh && this.runtimes.get(name) === rt) {
        this.runtimes.delete(name);
        await rt.stop();
      }
      throw err;
    }
  }

  /**
   * A deploy that starts, changes or ends a split. A version already running (as it would run now: same version, same
   * tail and queue setup) keeps its workerd; each other one starts on a runtime of its own, taking no traffic until
   * every one has started. Then the scripts' traffic goes to the new set at once, and the runtimes left over drain and stop.
   */
  private async deploySplit(run: RunnableScript, second?: { run: RunnableScript; percentage: number }): Promise<void> {
    const name = run.script.name;
    const running = this.runtimesOf(name);
    const wanted = second ? [run, second.run] : [run];
    const lanes = wanted.map((r) => running.find((rt) => this.runsAsWanted(rt, r)));
    const started: ScriptRuntime[] = [];
    try {
      for (const [i, r] of wanted.entries()) {
        if (lanes[i]) continue;
        const rt = this.newRuntime(name, ++this.laneSeq);
        started.push(rt);
        await rt.deploy(r);
        lanes[i] = rt;
      }
    } catch (err) {
      await Promise.all(started.map((rt) => rt.stop()));
      throw err;
    }
    this.runtimes.set(name, lanes[0]!);
    if (second) this.splits.set(name, { rt: lanes[1]!, percentage: second.percentage });
    else this.splits.delete(name);
    await Promise.all(running.filter((rt) => !lanes.includes(rt)).map((rt) => rt.stop()));
  }

  /** Whether `rt` runs `run` as it would start now (a split keeps such a version's workerd rather than start it again). */
  private runsAsWanted(rt: ScriptRuntime, run: RunnableScript): boolean {
    return (
      rt.versionId === run.script.versionId &&
      rt.queueConsumer === (run.queueConsumer === true) &&
      rt.tailRate === this.tailRateNow(run.script.name) &&
      run.durableObjects === undefined
    );
  }

  /**
   * The runtime that serves one invocation of script `name`: during a gradual deployment, the version a valid
   * `Cloudflare-Workers-Version-Overrides` entry for the script names if it is one of the two; else the one the
   * request's `Cloudflare-Workers-Version-Key` falls on; else one drawn by the versions' shares. Otherwise the script's
   * only runtime. Invocations without headers (cron ticks, queue batches, RPC sessions) go by the shares.
   */
  pick(name: string, headers?: IncomingHttpHeaders): ScriptRuntime | undefined {
    const primary = this.runtimes.get(name);
    const split = this.splits.get(name);
    if (!split || !primary) return primary;
    const override = versionOverride(headers, name);
    if (override !== undefined) {
      if (override === split.rt.versionId) return split.rt;
      if (override === primary.versionId) return primary;
    }
    // The version whose id sorts first takes the points below its share, the other the rest. The order does not
    // follow the shares (the primary changes as a rollout passes 50%), so raising a version's share only moves
    // keys onto it, as hosted; and every node orders the two alike.
    const splitFirst = (split.rt.versionId ?? "") < (primary.versionId ?? "");
    const [first, second] = splitFirst ? [split.rt, primary] : [primary, split.rt];
    const firstShare = splitFirst ? split.percentage : 100 - split.percentage;
    const point = versionKeyPoint(headers) ?? Math.random() * 100;
    return point < firstShare ? first : second;
  }

  /**
   * `pick` for an invocation of one handler that carries no request (a cron tick, a queue batch): when the version
   * drawn lacks that handler and the other version has it, the other one. A tick drawn to a version without
   * scheduled() would be skipped, and a batch drawn to one without queue() would spend a delivery attempt of each of
   * its messages (a dead letter after max_retries): the handler runs where it exists instead.
   */
  pickWith(name: string, handler: string): ScriptRuntime | undefined {
    const drawn = this.pick(name);
    if (!drawn || drawn.handlers.includes(handler)) return drawn;
    const other = drawn === this.runtimes.get(name) ? this.splits.get(name)?.rt : this.runtimes.get(name);
    return other?.handlers.includes(handler) ? other : drawn;
  }

  /** The scripts that run here. */
  names(): IterableIterator<string> {
    return this.runtimes.keys();
  }

  /** Every runtime script `name` has here: its one version, or the two of a gradual deployment (the primary first). */
  runtimesOf(name: string): ScriptRuntime[] {
    return [this.runtimes.get(name), this.splits.get(name)?.rt].filter((rt): rt is ScriptRuntime => rt !== undefined);
  }

  /** The versions script `name` runs here, with their shares (the primary first); none when it does not run. */
  versionsOf(name: string): { versionId: string | undefined; percentage: number }[] {
    const primary = this.runtimes.get(name);
    if (!primary) return [];
    const split = this.splits.get(name);
    return split
      ? [
          { versionId: primary.versionId, percentage: 100 - split.percentage },
          { versionId: split.rt.versionId, percentage: split.percentage },
        ]
      : [{ versionId: primary.versionId, percentage: 100 }];
  }

  async remove(name: string): Promise<void> {
    const rts = this.runtimesOf(name);
    this.runtimes.delete(name);
    this.splits.delete(name);
    await Promise.all(rts.map((rt) => rt.stop()));
  }

  /** The workerd in use (known once started). */
  get workerd(): WorkerdBinary | undefined {
    return this.binary;
  }

  /** Whether a running script's tail worker is not as wanted now: attached, missing, or sampling at another rate. */
  tailStale(name: string): boolean {
    const stale = (rt: ScriptRuntime | undefined) => rt?.tailRate !== undefined && rt.tailRate !== this.tailRateNow(name);
    return stale(this.runtimes.get(name)) || stale(this.splits.get(name)?.rt);
  }

  lookup(name: string): ScriptRuntime | undefined {
    return this.runtimes.get(name);
  }

  /** Runs one cron tick of a script (see ScriptRuntime.runScheduled), on a version `pickWith` chooses; undefined when it does not run or has no scheduled(). */
  runScheduled(name: string, cron: string, scheduledTime: number): Promise<ScheduledOutcome | undefined> {
    return this.pickWith(name, "scheduled")?.runScheduled(cron, scheduledTime) ?? Promise.resolve(undefined);
  }

  /** What a running version of a script handles (the primary one unless `versionId` names one); none for a version that does not run here. */
  handlersOf(name: string, versionId?: string): readonly string[] {
    const primary = this.runtimes.get(name);
    const rt = versionId === undefined ? primary : [primary, this.splits.get(name)?.rt].find((r) => r !== undefined && r.versionId === versionId);
    return rt?.handlers ?? [];
  }

  async stop(): Promise<void> {
    const all = [...this.runtimes.values(), ...[...this.splits.values()].map((lane) => lane.rt)];
    this.runtimes.clear();
    this.splits.clear();
    await Promise.all(all.map((rt) => rt.stop()));
    await this.bindings.stop();
    this.sockets?.remove();
    rmSync(this.runDir, { recursive: true, force: true });
  }
}
