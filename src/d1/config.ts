import type { OptionSpec, OptionValues } from "../core/cli/command.js";

/** D1's part of `edgecli serve`: its options (defaults live only here) and the settings read from them. */
export const serveOptions = {
  "d1-query-timeout": {
    type: "number",
    describe: "Seconds one D1 request (a query, a batch) may run before it is stopped and rolled back (imports and exports get 10x)",
    default: 30,
  },
  "d1-databases-per-account": {
    type: "number",
    describe: "D1 databases one account may have (creating one more is refused with code 7406, as the hosted API does)",
    default: 1000,
  },
  "d1-executor-memory": {
    type: "number",
    describe:
      'Megabytes of memory one D1 executor process may allocate (its data segment, SQLite\'s temporary storage included); past it the query fails with "out of memory"',
    default: 512,
  },
  "d1-busy-executors": {
    type: "number",
    describe:
      "D1 databases running a request at once on this node (past it requests are refused with 429, code 7430): with --d1-executor-memory, bounds D1's memory",
    default: 4,
  },
  "d1-busy-executors-per-account": {
    type: "number",
    describe: "D1 databases of one account running a request at once on this node (past it its requests are refused with 429, code 7430)",
    default: 2,
  },
} satisfies Record<string, OptionSpec>;

export interface D1Config {
  /** Milliseconds a request may run (at least 50). */
  queryTimeoutMs: number;
  /** Databases an account may have (at least 1). */
  databasesPerAccount: number;
  /** Bytes one executor process may allocate (at least 128 MiB: Node itself needs about 50). */
  executorMemoryBytes: number;
  /** Executors with work at once, on the node and per account (at least 1 each; per account at most the node's). */
  busyExecutors: number;
  busyExecutorsPerAccount: number;
}

export function readD1Config(options: OptionValues<typeof serveOptions>): D1Config {
  const atLeastOne = (n: number) => Math.max(1, Math.floor(n));
  const busyExecutors = atLeastOne(options["d1-busy-executors"]);
  return {
    queryTimeoutMs: Math.max(50, Math.round(options["d1-query-timeout"] * 1000)),
    databasesPerAccount: atLeastOne(options["d1-databases-per-account"]),
    executorMemoryBytes: Math.max(128, Math.floor(options["d1-executor-memory"])) * 1024 * 1024,
    busyExecutors,
    busyExecutorsPerAccount: Math.min(busyExecutors, atLeastOne(options["d1-busy-executors-per-account"])),
  };
}
