import { spawnSync } from "node:child_process";
import { accessSync, constants, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { delimiter, join } from "node:path";
import type { Logger } from "../../core/logger.js";
import { isRunning, procInfo, running } from "../../core/proc-info.js";

export { isRunning, procInfo };

/**
 * The first program of a leashed workerd: after `setpriv --pdeathsig KILL` has armed the parent-death signal it
 * checks that its parent is still the platform (`$1`) and only then becomes workerd. The kernel sends the signal
 * only when the parent dies after it was armed; a platform killed between fork and `prctl` would otherwise leave
 * a workerd without it. Exit status 70 (EX_SOFTWARE) is that case. The shell adds PWD to the environment it passes
 * on; it is removed, so workerd's environment stays exactly what the platform gave it.
 */
const PARENT_CHECK = '[ "$PPID" = "$1" ] || exit 70; shift; unset PWD; exec "$@"';

/** What is written per running workerd: enough to recognise that very process later, and never another one. */
interface PidRecord {
  pid: number;
  startTime: string;
  configFile: string;
}

/** The recorded process still runs: same pid, same start time (a pid given to a new process has a later one). */
function stillRunning(record: PidRecord): boolean {
  const info = procInfo(record.pid);
  return info !== undefined && info.startTime === record.startTime && running(info);
}

function findOnPath(name: string, path = process.env.PATH ?? ""): string | undefined {
  for (const dir of path.split(delimiter)) {
    if (!dir) continue;
    const file = join(dir, name);
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not here
    }
  }
  return undefined;
}

/**
 * Ties every workerd's life to the platform that started it, two ways:
 *
 * - **The kernel ends it with the platform.** Each workerd is started through `setpriv --pdeathsig KILL` (util-linux)
 *   and a one-line `sh` check (see PARENT_CHECK), so the moment the platform's process dies, for any reason including
 *   `kill -9`, the kernel sends its workerd processes SIGKILL. The exec chain keeps one pid and leaves no extra process.
 *   Node cannot call `prctl` itself, and a pipe whose EOF would end workerd needs a process to watch it, which a crash
 *   can orphan too; `setpriv` is in util-linux, which every Debian and nearly every Linux system has.
 * - **The next start ends any that escaped.** Each workerd gets a pid file recording its pid, its start time and its
 *   config file. On start the platform ends a recorded process only if /proc shows the same pid with the same start
 *   time and that config file on its command line, so a pid the system has since given to another program is never
 *   touched. This covers hosts without `setpriv` (or without /proc-style death signals at all).
 */
export class WorkerdLeash {
  private constructor(
    private readonly pidDir: string,
    private readonly setpriv: string | undefined,
  ) {}

  /**
   * Looks for a `setpriv` on PATH that accepts `--pdeathsig` (Linux only), says in the log when there is none, and
   * keeps pid files in `pidDir`.
   */
  static create(pidDir: string, log: Logger): WorkerdLeash {
    let setpriv = process.platform === "linux" ? findOnPath("setpriv") : undefined;
    if (setpriv && spawnSync(setpriv, ["--pdeathsig", "KILL", "--", "/bin/sh", "-c", "exit 0"], { stdio: "ignore", timeout: 10_000 }).status !== 0) {
      setpriv = undefined;
    }
    if (!setpriv) {
      log.warn(
        "setpriv (util-linux) with --pdeathsig was not found on PATH: a workerd outlives a platform that is killed outright until the platform starts again and ends it",
      );
    }
    mkdirSync(pidDir, { recursive: true, mode: 0o700 });
    return new WorkerdLeash(pidDir, setpriv);
  }

  /** The command that runs `binary args…` so that it dies with this process. */
  command(binary: string, args: readonly string[]): { file: string; args: string[] } {
    if (!this.setpriv) return { file: binary, args: [...args] };
    return { file: this.setpriv, args: ["--pdeathsig", "KILL", "--", "/bin/sh", "-c", PARENT_CHECK, "sh", String(process.pid), binary, ...args] };
  }

  /** Records a workerd just spawned (call it at once, before anything is awaited). */
  spawned(pid: number, configFile: string): void {
    const startTime = procInfo(pid)?.startTime;
    if (!startTime) return; // no /proc, or it is gone already: nothing could be checked later
    const record: PidRecord = { pid, startTime, configFile };
    writeFileSync(join(this.pidDir, `${pid}.json`), JSON.stringify(record), { mode: 0o600 });
  }

  exited(pid: number): void {
    rmSync(join(this.pidDir, `${pid}.json`), { force: true });
  }

  /**
   * Ends every recorded workerd that still runs (left by a platform that was killed), waits until each is gone (up
   * to `waitMs`), and removes the records. Returns the pids it ended.
   */
  static async endStrays(pidDir: string, log: Logger, waitMs = 10_000): Promise<number[]> {
    let names: string[];
    try {
      names = readdirSync(pidDir).filter((n) => n.endsWith(".json"));
    } catch {
      return [];
    }
    const ended: PidRecord[] = [];
    for (const name of names) {
      const file = join(pidDir, name);
      let record: PidRecord;
      try {
        record = JSON.parse(readFileSync(file, "utf8")) as PidRecord;
      } catch {
        rmSync(file, { force: true });
        continue;
      }
      const info = procInfo(record.pid);
      if (info && info.argv.includes(record.configFile) && stillRunning(record)) {
        try {
          process.kill(record.pid, "SIGKILL");
          ended.push(record);
          log.warn({ workerd_pid: record.pid, config: record.configFile }, "ended a workerd left running by a platform that did not stop cleanly");
        } catch (err) {
          log.error({ workerd_pid: record.pid, err: (err as Error).message }, "could not end a workerd left running by an earlier platform");
        }
      }
      rmSync(file, { force: true });
    }
    for (const deadline = Date.now() + waitMs; ended.some(stillRunning) && Date.now() < deadline;) {
      await new Promise((r) => setTimeout(r, 20));
    }
    return ended.map((r) => r.pid);
  }
}
