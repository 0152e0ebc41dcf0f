// The entry of an edge thread (--edge-threads; started by src/edge/threads/edge-threads.ts, handed over by
// src/platform.ts): the composition root of the thread, as platform.ts is the main thread's. Each area hands over
// the copy of its state the thread's tenant path reads (DNS's zones, Workers' routes), kept current by the bus the
// main thread relays.
import { join } from "node:path";
import { parentPort, workerData } from "node:worker_threads";
import { optionValues } from "./core/cli/option-values.js";
import { readCoreConfig, serveOptions as coreOptions } from "./core/config.js";
import { openDatabase } from "./core/db/sqlite.js";
import { createLogger } from "./core/logger.js";
import { serveOptions as dnsOptions } from "./dns/config.js";
import { openZoneReplica, type ZoneReplica } from "./dns/replica.js";
import type { ThreadStart } from "./edge/threads/messages.js";
import { serveEdgeThread } from "./edge/threads/serve.js";
import { ThreadBus } from "./edge/threads/thread-bus.js";
import { serveOptions as r2Options } from "./r2/config.js";
import { serveOptions as workersOptions } from "./workers/config.js";
import { openRouteReplica } from "./workers/routing/replica.js";

const start = workerData as ThreadStart;
const port = parentPort!;
const options = start.options;
const core = readCoreConfig(optionValues(options, coreOptions));
const log = createLogger({ level: core.logLevel }).child({ edgeThread: start.index });
const bus = new ThreadBus(start.nodeId, (n) => port.postMessage({ type: "applied", n }), start.startAt);
// The thread only reads: the main thread owns every write (and the migrations).
const openDb = (name: string) => openDatabase(join(start.stateDir, "db", `${name}.sqlite`), [], { readonly: true });
const names = optionValues(options, {
  "s3-host": r2Options["s3-host"],
  "workers-domain": workersOptions["workers-domain"],
  "name-servers": dnsOptions["name-servers"],
});

let zones: ZoneReplica | undefined;
serveEdgeThread({
  start,
  port,
  bus,
  log,
  core,
  names: { s3Host: names["s3-host"], workersDomain: names["workers-domain"], nameServers: names["name-servers"], listenHost: core.host },
  zones: (platformHostnames) => (zones = openZoneReplica({ options: optionValues(options, dnsOptions), db: openDb("dns"), bus, log, platformHostnames })),
  routes: () => openRouteReplica({ db: openDb("worker-routes"), zones: zones!.zonesPort, bus, log }),
  openDb,
});
