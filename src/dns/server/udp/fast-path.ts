import type dgram from "node:dgram";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** Set to 0 to answer UDP in JavaScript only (the path taken anyway when the addon is missing). */
export const NATIVE_ENV = "EDGE_DNS_NATIVE";
/** Name of the native answering thread, as /proc shows it. */
export const NATIVE_THREAD_NAME = "dns-udp-fast";

/** The addon of native/udp-fast.cc (beside this file): a thread answering cached queries off a UDP socket. */
export interface NativeUdp {
  /** Serves the socket until stop(); queries it has no answer for go to onMiss. */
  start(fd: number, onMiss: (query: Buffer, address: string, port: number) => void): void;
  stop(): void;
  /** Caches `answer` for every query equal to `query` after its id. */
  set(query: Buffer, answer: Buffer): void;
  /** Forgets every cached answer; no query is answered from them once this returns. */
  flush(): void;
  /** formerrs: malformed queries answered FORMERR by the thread itself (see wire-screen.ts). */
  stats(): { hits: number; misses: number; dropped: number; formerrs: number; entries: number; bytes: number };
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

/**
 * Hands a bound dgram socket to the native thread: libuv stops reading it (both would compete for the same
 * datagrams), while replies from JavaScript still go out through dgram. The descriptor is read through
 * dgram's internal state rather than the deprecated `_handle` getter, which warns on every use.
 */
export function serveNatively(native: NativeUdp, socket: dgram.Socket, onMiss: (query: Buffer, address: string, port: number) => void): void {
  const state = Object.getOwnPropertySymbols(socket).find((s) => s.description === "state symbol");
  const handle = state && (socket as unknown as Record<symbol, { handle?: { fd?: unknown; recvStop?: () => number } }>)[state]?.handle;
  if (typeof handle?.fd !== "number" || handle.fd < 0 || typeof handle.recvStop !== "function")
    throw new Error("this Node's dgram socket does not expose its descriptor");
  native.start(handle.fd, onMiss);
  handle.recvStop();
}
