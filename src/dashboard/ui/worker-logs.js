// Workers Logs: the kept invocations and console lines of one Worker (those deployed with [observability] enabled),
// read through the hosted query API (POST …/workers/observability/telemetry/query), newest first.
import { acct, api } from "./api.js";
import { h, link, table } from "./dom.js";

const enc = encodeURIComponent;
const PAGE = 100;
const WINDOWS = { "1 hour": 3600_000, "24 hours": 86_400_000, "7 days": 7 * 86_400_000 };

/** The page at #/worker-logs/<script>[/<window>]: a search form, the Worker's setting, and its events. */
export async function workerLogsPage(script, windowName = "1 hour", search = "") {
  const span = WINDOWS[windowName] ?? WINDOWS["1 hour"];
  const to = Date.now();
  const [settings, answer] = await Promise.all([
    api("GET", acct(`/workers/scripts/${enc(script)}/script-settings`)),
    api("POST", acct("/workers/observability/telemetry/query"), {
      queryId: "dashboard",
      view: "events",
      limit: PAGE,
      timeframe: { from: to - span, to },
      parameters: {
        filters: [{ key: "$metadata.service", operation: "eq", type: "string", value: script }],
        ...(search ? { needle: { value: search } } : {}),
      },
    }),
  ]);
  const obs = settings.result.observability ?? { enabled: false };
  const on = obs.logs?.enabled ?? obs.enabled;
  const rate = obs.logs?.head_sampling_rate ?? obs.head_sampling_rate ?? 1;
  const { events, count } = answer.result.events;

  const input = h("input", { name: "search", type: "search", value: search, placeholder: "text in a line or URL" });
  const select = h(
    "select",
    { name: "window" },
    Object.keys(WINDOWS).map((w) => h("option", { value: w, selected: w === windowName }, w)),
  );
  const form = h(
    "form",
    { name: "worker-logs-search" },
    h("label", {}, "Search", input),
    h("label", {}, "Last", select),
    h("button", { type: "submit" }, "Show"),
  );
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    location.hash = `#/worker-logs/${enc(script)}/${enc(select.value)}${input.value ? `/${enc(input.value)}` : ""}`;
  });

  return [
    h("h1", {}, `Logs of ${script}`),
    h("p", {}, link("All Workers", "#/workers")),
    h(
      "p",
      { class: "muted", id: "logs-setting" },
      on
        ? `Observability is on: ${Math.round(rate * 100)}% of invocations are kept, with their console lines.`
        : "Observability is off for this Worker: nothing is kept. Deploy it with [observability] enabled = true.",
    ),
    form,
    h("p", { class: "muted", id: "logs-count" }, count > events.length ? `The newest ${events.length} of ${count} events.` : `${count} events.`),
    table(
      [
        { label: "Time", value: (e) => new Date(e.timestamp).toLocaleString() },
        { label: "Kind", value: (e) => (e.$metadata.type === "cf-worker-event" ? "invocation" : "log") },
        { label: "Level", value: (e) => e.$metadata.level },
        { label: "Status", value: (e) => (e.$metadata.statusCode === undefined ? "" : String(e.$metadata.statusCode)) },
        { label: "Outcome", value: (e) => e.$workers?.outcome ?? "" },
        { label: "Duration", value: (e) => (e.$metadata.duration === undefined ? "" : `${e.$metadata.duration} ms`) },
        { label: "Message", value: (e) => h("code", {}, e.$metadata.message) },
      ],
      events,
      "No events in this time window.",
    ),
  ];
}

/** This module's pages and its `#/worker-logs/<script>` hash, as app.js gathers them from each area's module. */
export const logsPages = { workerLogs: workerLogsPage };
export const logsNested = { "worker-logs": "workerLogs" };
