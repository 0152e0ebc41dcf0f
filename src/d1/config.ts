import type { OptionSpec, OptionValues } from "../core/cli/command.js";

/** D1's part of `edgecli serve`: its options (defaults live only here) and the settings read from them. */
export const serveOptions = {
  "d1-query-timeout": {
    type: "number",
    describe: "Seconds one D1 request (a query, a batch) may run before it is stopped and rolled back (imports and exports get 10x)",
    default: 30,
  },
} satisfies Record<string, OptionSpec>;

export interface D1Config {
  /** Milliseconds a request may run (at least 50). */
  queryTimeoutMs: number;
}

export function readD1Config(options: OptionValues<typeof serveOptions>): D1Config {
  return { queryTimeoutMs: Math.max(50, Math.round(options["d1-query-timeout"] * 1000)) };
}
