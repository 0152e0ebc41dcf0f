import type { OptionSpec, OptionValues } from "../core/cli/command.js";

/** KV's part of `edgecli serve`: its options (defaults live only here) and the settings read from them. */
export const serveOptions = {
  "kv-purge-interval": { type: "number", describe: "Seconds between sweeps that reclaim expired KV entries (they are invisible at once)", default: 60 },
} satisfies Record<string, OptionSpec>;

export interface KvConfig {
  /** Milliseconds between sweeps that delete expired entries and their content (at least 100). */
  purgeIntervalMs: number;
}

export function readKvConfig(options: OptionValues<typeof serveOptions>): KvConfig {
  return { purgeIntervalMs: Math.max(0.1, options["kv-purge-interval"]) * 1000 };
}
