import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { UserError } from "../../core/errors.js";

/** The addon of native/fd.cc. */
interface NativeFd {
  duplicate(fd: number): number;
}

/** scripts/build-native.mjs puts it in dist/native/; this module runs from dist/edge/threads/ or from the bundle in dist/bin/. */
const ADDON_PATHS = ["../../native/edge_fd.node", "../native/edge_fd.node"].map((p) => fileURLToPath(new URL(p, import.meta.url)));

let loaded: NativeFd | undefined;

function addon(): NativeFd {
  if (loaded) return loaded;
  const path = ADDON_PATHS.find((p) => existsSync(p));
  if (process.platform !== "linux" || path === undefined)
    throw new UserError(
      `--edge-threads above 1 needs the native part ${ADDON_PATHS[0]} (Linux; npm run build builds it with g++ and make); start with --edge-threads 1`,
    );
  const mod = { exports: {} as NativeFd };
  process.dlopen(mod, path);
  return (loaded = mod.exports);
}

/**
 * A descriptor of its own for the listening socket `fd`, for one edge thread: Node closes a thread's descriptor when
 * the thread ends, which must never close the socket the other loops accept on.
 */
export function duplicateListenFd(fd: number): number {
  return addon().duplicate(fd);
}

/** Throws the UserError that says what is missing when edge threads cannot run here. */
export function requireListenFdSupport(): void {
  addon();
}
