// Shared by the workers benches that time keep-alive request loops against one process tree.
import { readFileSync } from "node:fs";

const TICK_US = 1e6 / 100; // USER_HZ

/** CPU time (µs) of a process and all its threads. */
export function cpuOf(pid) {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(f[11]) + Number(f[12])) * TICK_US;
}

/**
 * Runs `clients` loops of `once` for 300 ms to warm up, calls `atStart`, then runs them for `seconds`; returns how many
 * requests the timed part made and how long it took.
 */
export async function timedLoops(once, clients, seconds, atStart = () => {}) {
  let stop = Date.now() + 300;
  const loop = async () => {
    let n = 0;
    while (Date.now() < stop) {
      await once();
      n++;
    }
    return n;
  };
  await Promise.all(Array.from({ length: clients }, loop));
  atStart();
  const t0 = performance.now();
  stop = Date.now() + seconds * 1000;
  const n = (await Promise.all(Array.from({ length: clients }, loop))).reduce((a, b) => a + b, 0);
  return { n, secs: (performance.now() - t0) / 1000 };
}
