import { availableParallelism } from "node:os";
import type { OptionSpec } from "../../core/cli/command.js";
import { UserError } from "../../core/errors.js";

/** The edge threads' part of `edgecli serve` (edge/threads/). */
export const threadsServeOptions = {
  "edge-threads": {
    type: "string",
    describe:
      "Event loops that serve the edge port: the main thread and (n - 1) threads beside it, each taking new connections from the one listening socket. A thread serves proxied names no Worker is routed on (the proxy and the cache) itself and hands every other connection to the main thread. 'auto': one per CPU. Embedded (SQLite) only for now",
    default: "1",
  },
} satisfies Record<string, OptionSpec>;

/** The most loops accepted: each thread costs ~25 MiB and a share of the cache's budgets. */
const MAX_LOOPS = 64;

/** How many loops serve the edge port (1: the main thread alone, as before edge threads). */
export function readEdgeLoops(value: string, distributed: boolean): number {
  const text = value.trim();
  const n = text === "auto" ? Math.min(availableParallelism(), MAX_LOOPS) : /^[0-9]+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(n) || n < 1 || n > MAX_LOOPS)
    throw new UserError(`--edge-threads: "${value}" must be 'auto' or a whole number from 1 to ${MAX_LOOPS}`);
  if (n > 1 && distributed)
    throw new UserError(
      "--edge-threads above 1 is not supported with --database-url yet: the threads read the embedded SQLite state (use one thread per node)",
    );
  return n;
}
