import { existsSync } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { fileURLToPath } from "node:url";

/** Set to 0 to stream stored bodies in JavaScript only (the path taken anyway when the addon is missing). */
export const SENDFILE_ENV = "EDGE_CACHE_SENDFILE";
/**
 * A sendfile answer whose client takes no byte for this long is cut (nginx's send_timeout, whose default this is):
 * the connection is closed and the transfer's descriptors with it.
 */
export const SENDFILE_IDLE_MS = 60_000;
/**
 * Bytes one work item of libuv's thread pool sends at most before it gives its thread back (the transfer then
 * queues again behind the others): a few milliseconds of copying from the page cache.
 */
export const SENDFILE_CHUNK_BYTES = 4 * 1024 * 1024;

/** The addon of native/sendfile.cc (beside this file). */
export interface NativeSendfile {
  /**
   * Sends `length` bytes of the file from `offset` to the socket (both descriptors are duplicated first, so either
   * may be closed once this returns) and calls `done` once: errno 0 when all went, else why it stopped (ECANCELED
   * after cancel(), ETIMEDOUT when the client read nothing for `idleMs`, EPIPE/ECONNRESET when it went away, ENODATA
   * when the file was short), with the bytes sent. Throws when a descriptor cannot be duplicated or watched.
   */
  start(socketFd: number, fileFd: number, offset: number, length: number, idleMs: number, done: (errno: number, sent: number) => void): number;
  /** Ends a transfer and shuts its connection down; its `done` still comes (ECANCELED). No-op once it ended. */
  cancel(id: number): void;
  /** At most `maxRunning` work items on libuv's thread pool at once (all transfers together), each of at most `chunkBytes`. */
  configure(maxRunning: number, chunkBytes: number): void;
  /** Transfers not yet ended, work items running and waiting for a thread, totals. */
  stats(): { active: number; running: number; queued: number; maxRunning: number; workItems: number; finished: number };
}

/**
 * scripts/build-native.mjs puts the addon in dist/native/. This module runs from two places: tsc's output
 * (dist/edge/cache/) and the bundle (dist/bin/); the first of the two paths that exists is the addon.
 */
const ADDON_PATHS = ["../../native/edge_sendfile.node", "../native/edge_sendfile.node"].map((p) => fileURLToPath(new URL(p, import.meta.url)));
const ADDON = ADDON_PATHS.find((p) => existsSync(p)) ?? ADDON_PATHS[0];

let loaded: { native: NativeSendfile } | { why: string } | undefined;

/**
 * The addon (loaded once per process, and configured so its work takes at most half of libuv's thread pool: fs and
 * DNS lookups always keep the other half), or why stored bodies are streamed in JavaScript instead.
 */
export function loadSendfile(): { native: NativeSendfile } | { why: string } {
  if (process.env[SENDFILE_ENV] === "0") return { why: `${SENDFILE_ENV}=0` };
  if (loaded) return loaded;
  if (process.platform !== "linux") return (loaded = { why: "sendfile(2) is used on Linux only" });
  if (!existsSync(ADDON)) return (loaded = { why: `${ADDON} is missing (npm run build builds it; it needs g++ and make)` });
  try {
    const mod = { exports: {} as NativeSendfile };
    process.dlopen(mod, ADDON);
    const pool = Number(process.env.UV_THREADPOOL_SIZE) || 4;
    mod.exports.configure(Math.max(1, Math.floor(pool / 2)), SENDFILE_CHUNK_BYTES);
    loaded = { native: mod.exports };
  } catch (err) {
    loaded = { why: `${ADDON} does not load: ${(err as Error).message}` };
  }
  return loaded;
}

type NodeSocket = Socket & { encrypted?: boolean; _handle?: { fd?: number } | null; _httpMessage?: unknown };

/**
 * The connection an answer's body may be sent to with sendfile: plain TCP (not TLS, whose bytes Node encrypts), an
 * HTTP/1.x answer (HTTP/2's frames are Node's), and the answer the connection is writing now (a pipelined answer
 * waiting behind another is buffered by Node, not written). Undefined when the body must go through Node.
 */
export function sendfileSocket(res: ServerResponse): Socket | undefined {
  if (!(res instanceof ServerResponse)) return undefined;
  const socket = res.socket as NodeSocket | null;
  if (!socket || socket.encrypted || socket._httpMessage !== res || socket.destroyed || !socket.writable) return undefined;
  const fd = socket._handle?.fd;
  return typeof fd === "number" && fd >= 0 ? socket : undefined;
}

/**
 * Sends bytes `start`..`start + length - 1` of `file` as the body of `res` with sendfile(2), and takes over `file`
 * (closed when no longer needed). `res`'s head is set (writeHead, with a Content-Length, so Node adds no chunked
 * framing) and not yet written; `socket` is sendfileSocket(res).
 *
 * The head goes out through Node (res.write of nothing: the head alone, whose callback comes once it is in the
 * kernel and the socket's queue is empty); then the addon has the socket while Node writes nothing to it (the answer
 * is unfinished, so Node holds any pipelined answer back); then res.end() writes nothing more and lets keep-alive
 * and the next request go on. When the transfer fails (the client went away or stopped reading) the connection is
 * destroyed, as a half-sent body cannot be followed by anything. When sendfile cannot start, `fallback` streams the
 * body instead (it gets the file back).
 */
export function sendFileBody(
  native: NativeSendfile,
  res: ServerResponse,
  socket: Socket,
  file: FileHandle,
  start: number,
  length: number,
  fallback: (file: FileHandle) => void,
  idleMs = SENDFILE_IDLE_MS,
): void {
  let closed = false;
  const closedEarly = () => (closed = true);
  res.once("close", closedEarly);
  res.write("", (err) => {
    res.off("close", closedEarly);
    const s = socket as NodeSocket;
    if (err || closed || socket.destroyed || s._httpMessage !== res) return void file.close().catch(() => undefined);
    const fd = s._handle?.fd;
    // Nothing of Node's may still be queued before the body: the head's callback says it is written, and nothing
    // else writes to this connection while the answer is unfinished.
    if (typeof fd !== "number" || socket.writableLength !== 0) return fallback(file);
    let id: number;
    try {
      id = native.start(fd, file.fd, start, length, idleMs, (errno, sent) => {
        res.off("close", cancel);
        countSent(socket, sent);
        if (errno === 0) res.end();
        else socket.destroy();
      });
    } catch {
      return fallback(file);
    }
    // The addon has its own descriptor of the file: a purge or eviction may unlink it, the bytes stay until the end.
    void file.close().catch(() => undefined);
    const cancel = () => native.cancel(id);
    res.once("close", cancel);
  });
}

const SENT = Symbol("bytes sent with sendfile");
type CountedSocket = Socket & { [SENT]?: number };

/**
 * Adds bytes the addon sent to the connection's `bytesWritten` (the dispatch's metrics and analytics count an
 * answer's bytes from it): Node's own count only knows what went through Node.
 */
function countSent(socket: Socket, sent: number): void {
  const s = socket as CountedSocket;
  if (s[SENT] === undefined) {
    let proto: object | null = Object.getPrototypeOf(socket) as object | null;
    let getter: (() => number) | undefined;
    while (proto && !getter) {
      getter = Object.getOwnPropertyDescriptor(proto, "bytesWritten")?.get as (() => number) | undefined;
      proto = Object.getPrototypeOf(proto) as object | null;
    }
    if (!getter) return;
    const nodeCount = getter;
    s[SENT] = 0;
    Object.defineProperty(socket, "bytesWritten", {
      configurable: true,
      get(this: CountedSocket) {
        return nodeCount.call(this) + (this[SENT] ?? 0);
      },
    });
  }
  s[SENT]! += sent;
}
