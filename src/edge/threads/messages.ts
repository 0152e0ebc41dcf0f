import type { BusEvent } from "../../core/cluster/bus.js";
import type { HttpRequestEvent } from "../analytics/http-requests.js";
import type { EdgeTrafficArea } from "../metrics.js";

/** What an edge thread starts from (its workerData). */
export interface ThreadStart {
  /** 1 and up (0 is the main thread). */
  index: number;
  /** How many loops serve the edge port, the main thread's included (each keeps that share of the cache). */
  loops: number;
  /** The bus identity of the thread: never the node's, so the main thread's own notices are changes to it. */
  nodeId: string;
  stateDir: string;
  /** Every serve option by its long name, as the main thread merged them. */
  options: Map<string, unknown>;
  /**
   * The number of the last notice the main thread relayed, shared: a thread compares what it applied with it before
   * it answers anything itself (serve.ts, `current`).
   */
  relayed: Int32Array;
  /** The last notice relayed before this thread started: what it reads includes them. */
  startAt: number;
  /** The edge port's listening socket, which the thread accepts on too. */
  fd: number;
  /**
   * Started again after it exited: its cache share starts empty, as it missed the purges made while it was down.
   * A thread of a fresh start keeps its share (the node was down as a whole: nothing was purged meanwhile).
   */
  restarted: boolean;
  /** The main thread's Unix socket for the connections a thread does not serve (proxy-header.ts first). */
  handoverPath: string;
}

/** From the main thread to an edge thread. */
export type ToThread =
  /** A bus notice, numbered: the thread says `applied` with its number once its handlers' work is done. */
  | { type: "notice"; n: number; event: BusEvent }
  /** Stop accepting, finish the requests in flight (bounded); notices are still applied. */
  | { type: "drain" }
  /** Every change is relayed (the main thread's API is closed): close the cache, leave its clean-stop marker, exit. */
  | { type: "stop" };

/** From an edge thread to the main thread. */
export type FromThread =
  /** Its state is read and it accepts connections. */
  | { type: "ready" }
  /** Its requests are done (after `drain`). */
  | { type: "drained" }
  /** Every notice up to `n` is applied. */
  | { type: "applied"; n: number }
  /** Tenants' requests that ended, for the analytics' rollups (sent at most once a second). */
  | { type: "traffic"; events: HttpRequestEvent[]; requests: CountedRequest[]; open: OpenConnections };

/** The connections a thread serves now (the metrics' gauge sums the main thread's and the threads'). */
export interface OpenConnections {
  plain: number;
  tls: number;
}

/** One request the thread counted for the edge's metrics (EdgeRequestCounter.record's arguments). */
export type CountedRequest = [area: EdgeTrafficArea, status: number | undefined, zone: string, seconds: number, bytes: number, cacheStatus: string | undefined];
