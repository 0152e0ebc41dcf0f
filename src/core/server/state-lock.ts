import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { procInfo, running } from "../proc-info.js";

/** Written by `edgecli serve` into its state directory while it runs. */
export const SERVE_PID_FILE = "serve.pid";

interface ServeRecord {
  pid: number;
  /** From /proc: a pid reused by another process has another start time. */
  startTime: string;
}

/**
 * Marks `stateDir` as used by this process (an `edgecli serve`) until `release` is called. Commands that must not
 * run next to a platform on the same state (`edgecli state copy`) ask `serveUsing`. A platform killed with -9
 * leaves the file behind; its process is gone (or the pid belongs to another process, with another start time),
 * so the file then counts for nothing.
 */
export function markStateDirInUse(stateDir: string): { release(): void } {
  const file = join(stateDir, SERVE_PID_FILE);
  const record: ServeRecord = { pid: process.pid, startTime: procInfo(process.pid)?.startTime ?? "" };
  writeFileSync(file, JSON.stringify(record) + "\n", { mode: 0o600 });
  return { release: () => rmSync(file, { force: true }) };
}

/** The pid of the running `edgecli serve` that uses `stateDir`, or undefined when none does. */
export function serveUsing(stateDir: string): number | undefined {
  let record: ServeRecord;
  try {
    record = JSON.parse(readFileSync(join(stateDir, SERVE_PID_FILE), "utf8")) as ServeRecord;
  } catch {
    return undefined;
  }
  if (!Number.isInteger(record.pid) || record.pid <= 0) return undefined;
  const info = procInfo(record.pid);
  return info && running(info) && info.startTime === record.startTime ? record.pid : undefined;
}
