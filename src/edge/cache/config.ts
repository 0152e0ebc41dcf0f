import { existsSync, readdirSync, rmSync } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";
import type { OptionSpec, OptionValues } from "../../core/cli/command.js";
import { UserError } from "../../core/errors.js";
import type { PurgePlan } from "./purge-limits.js";

/** The largest object the hosted cache stores on the Free, Pro and Business plans (Enterprise: 5 GB). */
export const HOSTED_MAX_OBJECT_BYTES = 512 * 1024 * 1024;

/** The cache's part of `edgecli serve` (merged into the edge's options by edge/commands.ts). */
export const cacheServeOptions = {
  "cache-dir": {
    type: "string",
    describe: "Directory of this node's cache of proxied traffic (bodies and its SQLite index; each node has its own). Default: <state dir>/cache",
  },
  "cache-max-bytes": {
    type: "number",
    describe: "Bytes of bodies the cache keeps on disk at most; the least recently used go first. 0 turns the cache off (every answer BYPASS)",
    default: 1024 * 1024 * 1024,
  },
  "cache-max-object-bytes": {
    type: "number",
    describe: "The largest body stored (default 512 MiB, the hosted limit of the Free, Pro and Business plans); larger ones pass through",
    default: HOSTED_MAX_OBJECT_BYTES,
  },
  "cache-memory-bytes": {
    type: "number",
    describe:
      "Bytes the cache keeps in memory at most (this node's memory tier): bodies of objects up to 64 KiB and the heads of recently used objects, the least recently used out first; a HIT from memory never touches the disk. 0 keeps nothing in memory",
    default: 32 * 1024 * 1024,
  },
  "cache-purge-plan": {
    type: "string",
    choices: ["free", "pro", "business", "enterprise"] as const,
    describe:
      "Whose hosted purge rate limits apply, per account across all nodes: free (5 purges by tag/host/prefix/everything a minute, 25 at once; 800 URLs/s), pro (5/s, 25; 1,500 URLs/s), business (10/s, 50; 1,500 URLs/s), enterprise (50/s, 500; 3,000 URLs/s, 500 URLs per request)",
    default: "pro",
  },
} satisfies Record<string, OptionSpec>;

export interface CacheConfig {
  dir: string;
  maxBytes: number;
  maxObjectBytes: number;
  memoryBytes: number;
  purgePlan: PurgePlan;
}

export function readCacheConfig(options: OptionValues<typeof cacheServeOptions>, stateDir: string): CacheConfig {
  const bytes = (name: "cache-max-bytes" | "cache-max-object-bytes" | "cache-memory-bytes") => {
    const v = options[name];
    if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0) throw new UserError(`--${name}: ${v} must be a whole number of bytes, 0 or more`);
    return v;
  };
  const dir = options["cache-dir"];
  return {
    dir: dir === undefined || dir.trim() === "" ? join(stateDir, "cache") : isAbsolute(dir) ? dir : resolve(dir),
    maxBytes: bytes("cache-max-bytes"),
    maxObjectBytes: bytes("cache-max-object-bytes"),
    memoryBytes: bytes("cache-memory-bytes"),
    purgePlan: options["cache-purge-plan"],
  };
}

/**
 * The share of the cache one of `count` edge loops keeps (edge/threads/): loop 0 (the main thread) the configured
 * directory, loop i its `threads/<i>` inside it; each a `count`th of the disk and memory budgets, so that together
 * they keep what the operator allowed.
 */
export function cacheShare(cfg: CacheConfig, index: number, count: number): CacheConfig {
  if (count <= 1) return cfg;
  return {
    ...cfg,
    dir: index === 0 ? cfg.dir : join(cfg.dir, "threads", String(index)),
    maxBytes: Math.floor(cfg.maxBytes / count),
    memoryBytes: Math.floor(cfg.memoryBytes / count),
  };
}

/**
 * The shares of loops this start does not have (a run with more threads before): removed, as their objects missed
 * every purge made since. Those of the loops it has are kept (no purge can be missed while the whole node is down).
 */
export function removeUnusedShares(dir: string, count: number): void {
  const threads = join(dir, "threads");
  if (!existsSync(threads)) return;
  for (const name of readdirSync(threads))
    if (!/^[1-9][0-9]*$/.test(name) || Number(name) >= count) rmSync(join(threads, name), { recursive: true, force: true });
}
