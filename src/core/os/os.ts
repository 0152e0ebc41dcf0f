import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { UserError } from "../errors.js";

/** The addon of native/os.cc. */
interface NativeOs {
  duplicate(fd: number): number;
  trimFreedMemory(): boolean;
}

/** scripts/build-native.mjs puts it in dist/native/; this module runs from dist/core/os/ or from a bundle in dist/bin/. */
const ADDON_PATHS = ["../../native/edge_os.node", "../native/edge_os.node"].map((p) => fileURLToPath(new URL(p, import.meta.url)));

let loaded: NativeOs | null | undefined;

/** The addon, or null where it cannot run (not Linux, or not built). */
function addon(): NativeOs | null {
  if (loaded !== undefined) return loaded;
  const path = ADDON_PATHS.find((p) => existsSync(p));
  if (process.platform !== "linux" || path === undefined) return (loaded = null);
  const mod = { exports: {} as NativeOs };
  process.dlopen(mod, path);
  return (loaded = mod.exports);
}

/** Throws the UserError that says what is missing when edge threads cannot run here. */
export function requireListenFdSupport(): void {
  if (!addon())
    throw new UserError(
      `--edge-threads above 1 needs the native part ${ADDON_PATHS[0]} (Linux; npm run build builds it with g++ and make); start with --edge-threads 1`,
    );
}

/**
 * A descriptor of its own for the listening socket `fd`, for one edge thread: Node closes a thread's descriptor when
 * the thread ends, which must never close the socket the other loops accept on.
 */
export function duplicateListenFd(fd: number): number {
  requireListenFdSupport();
  return addon()!.duplicate(fd);
}

/**
 * Hands the memory the C library keeps freed (in every thread's arena) back to the kernel; nothing where the addon is
 * missing. relay.ts raises glibc's trim threshold so that streamed bodies reuse their buffers without page faults;
 * the cost is up to that threshold kept resident per arena once a large body has passed, and every edge thread has
 * an arena of its own (docs/benchmarks.md, "Edge threads").
 */
export function trimFreedMemory(): void {
  addon()?.trimFreedMemory();
}
