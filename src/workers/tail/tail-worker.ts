import { capnpString } from "../runtime/capnp-string.js";

/** The service name of the tail worker in a script's workerd config. */
export const TAIL_SERVICE = "edge-tail";

/** How long a reported invocation may wait in the tail worker for others to be posted with it. */
export const TAIL_FLUSH_MS = 100;
/** A batch is posted at once when it holds this many invocations, or this many characters (the hub takes 4 MiB). */
const TAIL_BATCH_EVENTS = 200;
const TAIL_BATCH_CHARS = 1024 * 1024;

/**
 * The tail worker every script's workerd runs beside it (workerd's `tails`) while its invocations are wanted: after
 * each invocation of the script, workerd calls its `tail()` with the invocation's trace (request, response status,
 * outcome, console output, uncaught exceptions), and it posts them to the binding server through `sink`, a service
 * whose injected header names the script. The script has no binding to that service and cannot reach the binding
 * server's socket, so it cannot post events as another script.
 *
 * What it costs every invocation is kept small (a Worker's throughput with it was 0.13–0.63 of without, one post per
 * invocation): the sampling is decided here first, before anything is serialized (RATE, the share of invocations
 * reported: 1 while someone tails the script, the Workers Logs head_sampling_rate otherwise; the post says it in
 * `?rate=`); the invocations kept are serialized once, to JSON text, and posted together, when TAIL_BATCH_EVENTS have
 * gathered or TAIL_FLUSH_MS after the first (a waitUntil of the invocation that started the batch). A batch still
 * waiting when workerd stops (the Worker redeployed) is lost: at most TAIL_FLUSH_MS of invocations.
 */
const source = (rate: number) => `const RATE = ${rate};
let batch = [];
let chars = 0;
let timerSet = false;
function post(env) {
  if (batch.length === 0) return;
  const body = "[" + batch.join(",") + "]";
  batch = [];
  chars = 0;
  return env.SINK.fetch("http://tail/?rate=" + RATE, { method: "POST", body }).then((r) => r.body?.cancel());
}
export default {
  tail(events, env, ctx) {
    for (const e of events) {
      if (RATE < 1 && Math.random() >= RATE) continue;
      // cpuTime and wallTime are not own properties of a trace item: JSON.stringify leaves them out.
      const item = JSON.stringify(e);
      const times = JSON.stringify({ cpuTime: e.cpuTime, wallTime: e.wallTime });
      const text = times === "{}" ? item : item === "{}" ? times : item.slice(0, -1) + "," + times.slice(1);
      batch.push(text);
      chars += text.length;
    }
    if (batch.length === 0) return;
    if (batch.length >= ${TAIL_BATCH_EVENTS} || chars >= ${TAIL_BATCH_CHARS}) return post(env);
    if (timerSet) return;
    timerSet = true;
    ctx.waitUntil(
      new Promise((resolve) => setTimeout(resolve, ${TAIL_FLUSH_MS})).then(() => {
        timerSet = false;
        return post(env);
      }),
    );
  },
};
`;

/**
 * The tail worker's service in workerd's config; `sink` is the binding-server service its posts go to, `rate` the
 * share of invocations it reports (0 < rate ≤ 1).
 */
export function tailWorkerService(sink: string, rate: number): string {
  return `(name = ${capnpString(TAIL_SERVICE)}, worker = (modules = [(name = "tail.js", esModule = ${capnpString(source(rate))})], compatibilityDate = "2024-09-01", bindings = [(name = "SINK", service = ${capnpString(sink)})]))`;
}
