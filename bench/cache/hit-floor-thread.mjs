// Preloaded (`node --import`) into the `thread` path of bench/cache/hit-floors.mjs: the platform, unchanged, with one
// worker thread beside its main thread that serves the `least` floor (hit-floor-server.mjs) on a port of its own
// (BENCH_HIT_FLOOR_THREAD_PORT). What it measures: a HIT served by Node's http server in an isolate of its own (its own
// heap, its own young generation, Node's internals seeing only its shapes) inside the platform's process, while the
// platform's main thread idles beside it. That is where an edge whose tenant path ran in a worker thread would stand.
import { Worker } from "node:worker_threads";

const source = `
import { createServer } from "node:http";
import { workerData, parentPort } from "node:worker_threads";
const { handlerFor } = await import(workerData.server);
const server = createServer({ maxHeaderSize: 32 * 1024, connectionsCheckingInterval: 16_500 }, handlerFor("least", workerData.head));
server.keepAliveTimeout = 65_000;
server.headersTimeout = 66_000;
server.requestTimeout = 0;
server.listen(workerData.port, "127.0.0.1", () => parentPort.postMessage("listening"));
`;
const worker = new Worker(new URL(`data:text/javascript,${encodeURIComponent(source)}`), {
  workerData: {
    server: new URL("./hit-floor-server.mjs", import.meta.url).href,
    head: process.env.BENCH_HIT_FLOOR_HEAD,
    port: Number(process.env.BENCH_HIT_FLOOR_THREAD_PORT),
  },
});
worker.unref();
worker.on("error", (error) => console.error("hit-floor thread:", error));
