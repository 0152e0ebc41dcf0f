// Small helpers the benches share: the median of a list, the load average as printed beside each round.
import { loadavg } from "node:os";

/** The median (the upper one of an even count), as every bench's "median of the rounds" takes it. */
export const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** The 1, 5 and 15 minute load averages, one decimal each. */
export const loadText = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(" ");
