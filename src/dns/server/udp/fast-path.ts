import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** Set to 0 to answer UDP in JavaScript only (the path taken anyway when the addon is missing). */
export const NATIVE_ENV = "EDGE_DNS_NATIVE";
/** Name of the native answering thread, as /proc shows it. */
export const NATIVE_THREAD_NAME = "dns-udp-fast";

/** The addon of native/udp-fast.cc (beside this file): a thread answering cached queries off a UDP socket of its own. */
export interface NativeUdp {
  /**
   * Opens this process's socket on address:port with SO_REUSEPORT (each answering process has its own; the kernel
   * spreads clients over them) and serves it until stop(); queries it has no answer for go to onMiss. Returns the
   * port bound. Throws with `code` (EADDRINUSE...) when it cannot bind.
   */
  listen(address: string, port: number, onMiss: (query: Buffer, address: string, port: number) => void): number;
  /** Sends a reply from that socket (so it leaves from the DNS port); false when it could not go out now. */
  send(message: Buffer, address: string, port: number): boolean;
  stop(): void;
  /** Caches `answer` for every query equal to `query` after its id. */
  set(query: Buffer, answer: Buffer): void;
  /** Forgets every cached answer; no query is answered from them once this returns. */
  flush(): void;
  /** formerrs: malformed queries answered FORMERR by the thread itself (see wire-screen.ts). */
  stats(): { hits: number; misses: number; dropped: number; formerrs: number; entries: number; bytes: number };
  /** Answers the thread sent, as running totals [cell, total, ...] by question type and response code (wire-stats.ts). */
  answered(): number[];
  /**
   * The queries the thread answered from each cached answer since the last call (its repeats, which JavaScript never
   * sees): [answer's header and question, count, ..., lost], `lost` being hits whose question was not kept (more
   * than 50,000 cached answers replaced or flushed between two calls).
   */
  hitCounts(): (Buffer | number)[];
  /** The answer table's hash of a key (hex): keyed by a random key drawn when the addon loads, so it differs per process. */
  keyHash(key: Buffer): string;
}

/**
 * scripts/build-native.mjs puts the addon in dist/native/. This module runs from two places: tsc's output
 * (dist/dns/server/udp/) and the bundle (dist/bin/); the first of the two paths that exists is the addon.
 */
const ADDON_PATHS = ["../../../native/dns_udp_fast.node", "../native/dns_udp_fast.node"].map((p) => fileURLToPath(new URL(p, import.meta.url)));
const ADDON = ADDON_PATHS.find((p) => existsSync(p)) ?? ADDON_PATHS[0];

/** The addon, or why the JavaScript path is taken instead. */
export function loadNativeUdp(): { native: NativeUdp } | { why: string } {
  if (process.env[NATIVE_ENV] === "0") return { why: `${NATIVE_ENV}=0` };
  if (!existsSync(ADDON)) return { why: `${ADDON} is missing (npm run build builds it; it needs g++ and make)` };
  try {
    const mod = { exports: {} as NativeUdp };
    process.dlopen(mod, ADDON);
    return { native: mod.exports };
  } catch (err) {
    return { why: `${ADDON} does not load: ${(err as Error).message}` };
  }
}
