import type { IncomingMessage, ServerResponse } from "node:http";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { util as undiciUtil, type Dispatcher, type buildConnector } from "undici";

/**
 * The one header policy of the edge's forwarding (Workers' traffic to workerd, proxied traffic to origins, Workers'
 * subrequests): headers that describe one connection are never passed on, either way (RFC 9110 §7.6.1), nor those a
 * Connection header lists. `expect` is answered by Node's server itself (the body follows), so it is not passed on.
 */
export const HOP_BY_HOP = new Set(["connection", "keep-alive", "proxy-connection", "te", "trailer", "upgrade", "transfer-encoding", "expect"]);

/** Names a Connection header lists (hop-by-hop too), from a flat [name, value, …] list; undefined when there is none. */
export function connectionListed(raw: readonly string[]): Set<string> | undefined {
  let out: Set<string> | undefined;
  for (let i = 0; i < raw.length; i += 2)
    if (raw[i].length === 10 && raw[i].toLowerCase() === "connection")
      for (const n of raw[i + 1].split(",")) if (n.trim()) (out ??= new Set()).add(n.trim().toLowerCase());
  return out;
}

/**
 * A request's headers as they are passed on: the client's, in their order and repeated as they came, minus
 * hop-by-hop ones, those its Connection header lists and those in `drop` (lowercase names the caller sets itself),
 * then `set` ([name, value, …]) appended. An HTTP/2 request's `:authority` becomes `host`; its other pseudo-headers
 * are dropped.
 */
export function passedRequestHeaders(rawHeaders: readonly string[], drop: ReadonlySet<string>, set: readonly string[]): string[] {
  const listed = connectionListed(rawHeaders);
  const out: string[] = [];
  for (let i = 0; i < rawHeaders.length; i += 2) {
    let name = rawHeaders[i].toLowerCase();
    // An HTTP/2 request's pseudo-headers: its :authority is the Host passed on (HTTP/1.1), the others are not headers.
    if (name.charCodeAt(0) === 58) {
      if (name !== ":authority") continue;
      name = "host";
    }
    if (HOP_BY_HOP.has(name) || drop.has(name) || listed?.has(name)) continue;
    out.push(name === "host" ? "host" : rawHeaders[i], rawHeaders[i + 1]);
  }
  for (const v of set) out.push(v);
  return out;
}

/**
 * An answer's headers as a flat [name, value, ...] list for `writeHead` (repeated ones, such as set-cookie, stay
 * separate), without hop-by-hop ones, those its Connection header names and those in `drop` (lowercase names); and
 * its content-length (-1 when none).
 */
export function relayableHeaders(raw: readonly Buffer[], drop?: ReadonlySet<string>): { list: string[]; contentLength: number } {
  const list: string[] = [];
  let listed: Set<string> | undefined;
  let contentLength = -1;
  for (let i = 0; i < raw.length; i += 2) {
    // undici's lookup of the well-known names (a byte-wise tree, case-insensitive) answers its own lowercase string
    // without making one: measured about half the cost of toString + toLowerCase a name (docs/benchmarks.md).
    const name = undiciUtil.headerNameToString(raw[i]);
    if (name === "connection") {
      // The names it lists that are hop-by-hop anyway change nothing: `keep-alive` alone (most answers of a kept-alive
      // origin) needs neither the set nor the second pass below.
      const value = raw[i + 1].toString("latin1").toLowerCase();
      if (value === "keep-alive") continue;
      for (const t of value.split(",")) {
        const listedName = t.trim();
        if (!HOP_BY_HOP.has(listedName)) (listed ??= new Set()).add(listedName);
      }
      continue;
    }
    if (HOP_BY_HOP.has(name) || drop?.has(name)) continue;
    const value = raw[i + 1].toString("latin1");
    if (name === "content-length") contentLength = Number(value);
    list.push(name, value);
  }
  if (!listed) return { list, contentLength };
  const kept: string[] = [];
  for (let i = 0; i < list.length; i += 2) if (!listed.has(list[i])) kept.push(list[i], list[i + 1]);
  return { list: kept, contentLength: listed.has("content-length") ? -1 : contentLength };
}

/**
 * How many bytes a relay lets wait in one socket's write buffer before it stops reading the other side: the client's
 * response for an answer, the connection to workerd or the origin for a request body (the pools' sockets are made with
 * it, `relayConnectOptions`). Node's default (16 KiB; undici's own sockets 64 KiB) is at or below one 64 KiB read, so
 * every chunk of a large body paused and resumed the reading side (measured: 8,190 pauses in a 512 MiB upload, and
 * about a third more CPU per byte than with this bound). Memory held per transfer stays bounded by it.
 */
export const RELAY_HIGH_WATER_MARK = 256 * 1024;

/**
 * Socket options for undici's connector (a Pool's `connect`): the write buffer bound a relayed request body may fill.
 * undici passes them on to net.connect/tls.connect, whose sockets take `highWaterMark` (Node's types do not list it).
 */
export const relayConnectOptions = { highWaterMark: RELAY_HIGH_WATER_MARK } as Partial<buildConnector.BuildOptions>;

/**
 * Makes the C library's allocator keep freed relay buffers for reuse instead of handing them back to the kernel.
 *
 * Every chunk a relay moves is a fresh 64 KiB Buffer (Node's HTTP parser copies each request-body chunk; undici's
 * reads are new allocations too) that V8 frees only at a later collection, many at once. glibc then finds that much
 * free memory at the top of its heap, above its trim threshold (128 KiB until it raises it), returns it to the kernel,
 * and the next buffers are faulted in again page by page: measured 42,000–255,000 minor page faults a GiB uploaded
 * through the edge (up to one per 4 KiB page relayed), against 1,000–2,500 with the threshold raised
 * (docs/benchmarks.md, "The upload's page faults"). glibc raises its trim threshold itself, to twice the size of the
 * largest mmap-ed block freed so far (blocks of up to 32 MiB count), unless an operator set MALLOC_* options; one such
 * block, allocated and dropped here (never written: none of its pages becomes resident), sets it from the start
 * rather than whenever some large block happens to be freed. The block is as large as counts, so the threshold is
 * ~64 MiB: in some platforms V8 frees the relay's buffers ~32 MiB at a time (its array-buffer sweeper, from a
 * background thread, seen with strace as one 32 MiB brk shrink a collection), which an 8 MiB block's 16 MiB
 * threshold let go back every time (3 platforms of 60 faulted on every upload; 0 of 100 with this block; idle RSS
 * after the uploads alike, 157–168 MiB: docs/benchmarks.md, "The trim threshold against 32 MiB frees"). Other C
 * libraries ignore it (it is then a 32 MiB allocation, never touched, freed at the collection below). Idempotent.
 */
export function keepRelayBuffersResident(): void {
  if (buffersKeptResident) return;
  buffersKeptResident = true;
  Buffer.allocUnsafeSlow(TRIM_RAISING_BLOCK_BYTES);
  // The block is freed only when V8 collects it: at the next scavenge while it is young, but once promoted (a start
  // busy enough to scavenge twice before it dies; more likely with the bin's 4 MiB semi-spaces) only at a full
  // collection, which a platform may not make for hours: upload.test saw 2 platforms of 8 keep faulting every
  // upload. One full collection now makes the free certain (a few ms, once, as the platform starts).
  collectGarbage("major");
}
let buffersKeptResident = false;

let gc: ((options: { type: "major" | "minor" }) => void) | undefined;
/**
 * A collection now: "minor" (the young generation, ~0.4 ms) or "major" (everything). V8's `gc` is taken once from a
 * context of its own, the flag turned off again at once, so no script of the platform's ever sees a global `gc`.
 */
export function collectGarbage(type: "major" | "minor"): void {
  if (!gc) {
    setFlagsFromString("--expose-gc");
    gc = runInNewContext("gc") as (options: { type: "major" | "minor" }) => void;
    setFlagsFromString("--no-expose-gc");
  }
  gc({ type });
}
/**
 * Above glibc's default 128 KiB mmap threshold (so it is mmap-ed), and with its chunk header and page rounding still
 * within the 32 MiB that glibc's dynamic thresholds count (a larger block would leave the threshold where it was).
 */
const TRIM_RAISING_BLOCK_BYTES = 32 * 1024 * 1024 - 64 * 1024;

/** What one relayed exchange is: the request as sent on, and what happens around the answer. */
export interface Relay {
  path: string;
  method: string;
  /** Flat [name, value, …] (passedRequestHeaders) or an object. */
  headers: string[] | Record<string, string | string[]>;
  /** The client's request when it has a body (streamed on with backpressure), else null. */
  body: IncomingMessage | null;
  /** Headers added to the answer ([name, value, …], e.g. cf-ray). */
  answerHeaders?: readonly string[];
  /** Answer headers not passed on besides the hop-by-hop ones (lowercase names). */
  dropAnswerHeaders?: ReadonlySet<string>;
  headersTimeout?: number;
  bodyTimeout?: number;
  /** The answer's head as relayed (flat [name, value, …], names lowercased): what a caller counts it by. */
  answered?(status: number, headers: readonly string[]): void;
  /**
   * The exchange failed. `answered` says whether the answer's head was already written (the caller then can only cut
   * the connection). Not called when the client went away first.
   */
  failed(err: NodeJS.ErrnoException, answered: boolean): void;
}

/**
 * Relays one request through an undici dispatcher (a Pool) and writes the answer straight into the client's
 * response: the edge's one forwarding path (Workers' traffic to workerd and proxied traffic to origins alike).
 * undici's dispatch API is used without stream objects in between; the chunk that completes an answer of known length
 * is written together with its end, so a small answer leaves in one write; anything else is written as it arrives
 * with backpressure (a 1 GiB answer never sits in memory: at most RELAY_HIGH_WATER_MARK waits in the edge per way). A client that goes away cancels the request.
 */
export function relay(dispatcher: Dispatcher, res: ServerResponse, r: Relay): void {
  const exchange = new RelayedExchange(res, r);
  res.on("close", exchange.onClientClose);
  dispatcher.dispatch(
    {
      path: r.path,
      method: r.method as Dispatcher.HttpMethod,
      headers: r.headers,
      body: r.body,
      headersTimeout: r.headersTimeout,
      bodyTimeout: r.bodyTimeout,
    },
    exchange,
  );
}

/**
 * One relayed exchange: undici's own handler interface (onConnect/onHeaders/onData/...; the controller-style one is an
 * adapter over it that turns the raw header list into an object first, which this relays as a list anyway). One object
 * a request, its handlers on the prototype (they were seven closures and an object a request: at a proxied 1 KiB GET's
 * rate, allocations are young-generation collections, docs/benchmarks.md).
 */
class RelayedExchange implements Dispatcher.DispatchHandler {
  private abortRequest: ((err: Error) => void) | undefined = undefined;
  /** Bytes of the answer's body still to come (-1: no content-length). */
  private remaining = -1;
  /** The chunk that completes an answer of known length: written with the end, so a small answer leaves in one write. */
  private last: Buffer | undefined = undefined;
  private resumeReading: (() => void) | undefined = undefined;
  private gone = false;
  /**
   * Whether undici is done with the exchange (completed or failed): the listeners on `res` then do nothing, so they
   * are left in place rather than removed (the response lives no longer than its exchange; removing cost more per
   * request than they ever do afterwards).
   */
  private settled = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly r: Relay,
  ) {}

  /** The client's response closed: before the answer was written, the client went away and the request is cancelled. */
  readonly onClientClose = () => {
    if (this.settled || this.res.writableFinished) return;
    this.gone = true;
    this.abortRequest?.(new Error("the client went away"));
  };

  /** Made the first time the client's buffer is full (a large answer's), not for every exchange. */
  private onDrain: (() => void) | undefined = undefined;

  onConnect(abortRequest: (err: Error) => void): void {
    this.abortRequest = abortRequest;
    if (this.res.destroyed) {
      this.gone = true;
      abortRequest(new Error("the client went away"));
    }
  }

  onHeaders(status: number, rawHeaders: Buffer[], resumeReading: () => void, statusMessage?: string): boolean {
    // 1xx answers (e.g. 103 Early Hints) are not relayed; the final answer follows.
    if (status < 200) return true;
    this.resumeReading = resumeReading;
    const relayed = relayableHeaders(rawHeaders, this.r.dropAnswerHeaders);
    this.remaining = relayed.contentLength;
    const added = this.r.answerHeaders;
    if (added) for (let i = 0; i < added.length; i++) relayed.list.push(added[i]);
    this.res.writeHead(status, statusMessage, relayed.list);
    this.r.answered?.(status, relayed.list);
    return true;
  }

  onData(chunk: Buffer): boolean {
    this.remaining -= chunk.length;
    if (this.remaining === 0) {
      this.last = chunk;
      return true;
    }
    // Reading goes on while less than RELAY_HIGH_WATER_MARK waits to be written to the client (not only while
    // Node's smaller default says so); past it, until the answer's buffer has drained.
    const res = this.res;
    if (res.write(chunk) || res.writableLength < RELAY_HIGH_WATER_MARK) return true;
    res.once(
      "drain",
      (this.onDrain ??= () => {
        if (!this.settled) this.resumeReading?.();
      }),
    );
    return false;
  }

  onComplete(): void {
    this.settled = true;
    this.res.end(this.last);
  }

  onError(err: NodeJS.ErrnoException): void {
    this.settled = true;
    if (this.gone || this.res.destroyed) return;
    this.r.failed(err, this.res.headersSent);
  }
}
