import { readFileSync } from "node:fs";

/** What /proc says about a process: when it started (clock ticks after boot, fixed for its life) and its arguments. */
export interface ProcInfo {
  startTime: string;
  state: string;
  argv: string[];
}

/** Reads /proc/<pid>; undefined when there is no such process (or no /proc). */
export function procInfo(pid: number): ProcInfo | undefined {
  let stat: string;
  let cmdline: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
  } catch {
    return undefined;
  }
  // Field 2 is the command name in parentheses and may itself hold spaces or parentheses: split after the last ")".
  // What follows starts at field 3 (state); field 22 is the start time.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return { state: fields[0] ?? "", startTime: fields[19] ?? "", argv: cmdline.split("\0").filter(Boolean) };
}

/** True while `pid` runs (a zombie has ended; it only waits for a parent to collect its status). */
export function isRunning(pid: number): boolean {
  const info = procInfo(pid);
  return info !== undefined && running(info);
}

/** The process has not ended (a zombie or a dead one has). */
export const running = (info: ProcInfo) => info.state !== "Z" && info.state !== "X";
