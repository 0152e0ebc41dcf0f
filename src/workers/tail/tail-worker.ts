import { capnpString } from "../runtime/capnp-string.js";

/** The service name of the tail worker in a script's workerd config. */
export const TAIL_SERVICE = "edge-tail";

/**
 * The tail worker every script's workerd runs beside it (workerd's `tails`): after each invocation of the script,
 * workerd calls its `tail()` with the invocation's trace (request, response status, outcome, console output,
 * uncaught exceptions), and it posts them to the binding server through `sink`, a service whose injected header
 * names the script. The script has no binding to that service and cannot reach the binding server's socket, so it
 * cannot post events as another script.
 */
const SOURCE = `export default {
  async tail(events, env) {
    // cpuTime and wallTime are not own properties of a trace item: JSON.stringify would leave them out.
    const body = events.map((e) => ({ ...JSON.parse(JSON.stringify(e)), cpuTime: e.cpuTime, wallTime: e.wallTime }));
    await env.SINK.fetch("http://tail/", { method: "POST", body: JSON.stringify(body) });
  },
};
`;

/** The tail worker's service in workerd's config; `sink` is the binding-server service its posts go to. */
export function tailWorkerService(sink: string): string {
  return `(name = ${capnpString(TAIL_SERVICE)}, worker = (modules = [(name = "tail.js", esModule = ${capnpString(SOURCE)})], compatibilityDate = "2024-09-01", bindings = [(name = "SINK", service = ${capnpString(sink)})]))`;
}
