// What /proc says about the server under a benchmark (Linux only).
import { readdirSync, readFileSync } from "node:fs";

/** CPU seconds (user + system) used so far by a process, its threads and its live descendants. */
export function treeCpuSeconds(pid) {
  let ticks = 0;
  const visit = (p) => {
    try {
      const f = readFileSync(`/proc/${p}/stat`, "utf8").split(") ")[1].split(" ");
      ticks += Number(f[11]) + Number(f[12]);
      for (const t of readdirSync(`/proc/${p}/task`))
        for (const c of readFileSync(`/proc/${p}/task/${t}/children`, "utf8").split(" ").filter(Boolean)) visit(c);
    } catch {
      /* exited meanwhile */
    }
  };
  visit(pid);
  return ticks / 100; // USER_HZ is 100 on Linux
}

/** Datagrams the kernel dropped at UDP sockets bound to this local port because their receive buffer was full (/proc/net/udp). */
export function udpReceiveDrops(localPort) {
  const hex = `:${localPort.toString(16).toUpperCase().padStart(4, "0")}`;
  let drops = 0;
  for (const line of readFileSync("/proc/net/udp", "utf8").split("\n").slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f[1]?.endsWith(hex)) drops += Number(f.at(-1));
  }
  return drops;
}
