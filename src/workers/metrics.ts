import { readFileSync } from "node:fs";
import type { ServerResponse } from "node:http";
import { Counter, Histogram, type Registry } from "prom-client";
import { METRIC_PREFIX, statusClass } from "../core/metrics/registry.js";

/**
 * Scripts with a `script` label of their own, per node: the first this many to be invoked (or to run) since the
 * node started; any other is counted under "(other)". Script names are tenants' choice, so this caps the series a
 * node exports however many Workers its tenants deploy.
 */
export const MAX_SCRIPT_LABELS = 500;
export const OTHER_SCRIPTS = "(other)";

/** Linux's clock ticks per second (USER_HZ), the unit of /proc/<pid>/stat's CPU times. */
const CLOCK_TICKS = 100;

/** What the metrics read of the runtime: the scripts that run here and their workerd processes. */
export interface RunningScripts {
  names(): Iterable<string>;
  pids(name: string): (number | undefined)[];
}

/**
 * Workers' metrics: invocations (edge requests and service bindings' fetches) by script and status class, their wall
 * time, subrequests (fetch() to anywhere but a binding), and the CPU time of each script's workerd processes, read
 * from /proc when scraped (workerd reports no per-request CPU time).
 */
export class WorkersMetrics {
  private readonly labelled = new Set<string>();
  private readonly invocations: Counter<"script" | "status_class">;
  private readonly wallSeconds: Counter<"script">;
  private readonly duration: Histogram;
  private readonly subrequests: Counter<"script">;

  constructor(registry: Registry, running: RunningScripts) {
    this.invocations = new Counter({
      name: `${METRIC_PREFIX}workers_invocations_total`,
      help: `Invocations of Workers through their fetch handler (edge requests, service bindings), by script (${MAX_SCRIPT_LABELS} per node, then "${OTHER_SCRIPTS}") and status class ("aborted": the client left first; 5xx: errors, the edge's 502/503/504 for a Worker that did not answer included)`,
      labelNames: ["script", "status_class"],
      registers: [registry],
    });
    this.wallSeconds = new Counter({
      name: `${METRIC_PREFIX}workers_wall_seconds_total`,
      help: "Wall time of Workers' invocations, from the request reaching the Worker to the end of its answer, by script",
      labelNames: ["script"],
      registers: [registry],
    });
    this.duration = new Histogram({
      name: `${METRIC_PREFIX}workers_invocation_duration_seconds`,
      help: "Wall time of Workers' invocations (all scripts)",
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    });
    this.subrequests = new Counter({
      name: `${METRIC_PREFIX}workers_subrequests_total`,
      help: "Workers' subrequests (fetch() to their zones' origins or the Internet; bindings not included), by script",
      labelNames: ["script"],
      registers: [registry],
    });
    const label = (name: string) => this.scriptLabel(name);
    new Counter({
      name: `${METRIC_PREFIX}workers_cpu_seconds_total`,
      help: "CPU time (user and system) of the workerd processes running each script, read when scraped; a restarted workerd starts again from 0 (a counter reset)",
      labelNames: ["script"],
      registers: [registry],
      collect() {
        this.reset();
        for (const name of running.names()) {
          let ticks = 0;
          for (const pid of running.pids(name)) if (pid !== undefined) ticks += cpuTicks(pid);
          this.inc({ script: label(name) }, ticks / CLOCK_TICKS);
        }
      },
    });
  }

  /** The script's label: its name, or "(other)" past the cap. */
  scriptLabel(name: string): string {
    if (this.labelled.has(name)) return name;
    if (this.labelled.size >= MAX_SCRIPT_LABELS) return OTHER_SCRIPTS;
    this.labelled.add(name);
    return name;
  }

  /** Counts one invocation of `script` once its answer ends (or the client goes away). */
  invocation(script: string, res: ServerResponse): void {
    const started = performance.now();
    res.once("close", () => {
      const seconds = (performance.now() - started) / 1000;
      const label = this.scriptLabel(script);
      const status = res.headersSent ? res.statusCode : undefined;
      this.invocations.inc({ script: label, status_class: status === undefined || !res.writableFinished ? "aborted" : statusClass(status) });
      this.wallSeconds.inc({ script: label }, seconds);
      this.duration.observe(seconds);
    });
  }

  subrequest(script: string): void {
    this.subrequests.inc({ script: this.scriptLabel(script) });
  }
}

/** utime + stime of a process in clock ticks (0 when it is gone). */
function cpuTicks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}
