// Charts of the GraphQL Analytics API's numbers, drawn with uPlot (a small canvas chart library, served from /dash/).
// Each chart comes with its numbers in words: a canvas says nothing to a screen reader.
import uPlot from "/dash/uPlot.esm.js";
import { graphql } from "./api.js";
import { h } from "./dom.js";

const HOURS = 6;
const STEP = 300; // seconds: the five-minute buckets of the query

const ZONE_TRAFFIC = `query zoneTraffic($zoneTag: String, $filter: ZoneHttpRequestsAdaptiveGroupsFilter_InputObject) {
  viewer { zones(filter: { zoneTag: $zoneTag }) {
    httpRequestsAdaptiveGroups(limit: 10000, filter: $filter, orderBy: [datetimeFiveMinutes_ASC]) {
      count
      sum { edgeResponseBytes }
      dimensions { datetimeFiveMinutes edgeResponseStatus }
    }
  } }
}`;

/** The zone's requests and errors (5xx) over the last hours, in five-minute steps. */
export async function zoneTrafficChart(zoneId) {
  const to = Math.floor(Date.now() / 1000);
  const from = Math.floor((to - HOURS * 3600) / STEP) * STEP;
  const data = await graphql(ZONE_TRAFFIC, {
    zoneTag: zoneId,
    filter: { datetime_geq: new Date(from * 1000).toISOString(), datetime_leq: new Date(to * 1000).toISOString() },
  });
  const groups = data.viewer.zones[0].httpRequestsAdaptiveGroups;
  const times = [];
  for (let t = from; t <= to; t += STEP) times.push(t);
  const requests = times.map(() => 0);
  const errors = times.map(() => 0);
  let total = 0;
  let failed = 0;
  let bytes = 0;
  for (const g of groups) {
    const i = Math.round((Date.parse(g.dimensions.datetimeFiveMinutes) / 1000 - from) / STEP);
    if (i < 0 || i >= times.length) continue;
    requests[i] += g.count;
    total += g.count;
    bytes += g.sum.edgeResponseBytes;
    if (g.dimensions.edgeResponseStatus >= 500) {
      errors[i] += g.count;
      failed += g.count;
    }
  }
  const plot = h("div", { class: "chart", role: "img", "aria-label": `Requests and errors of the last ${HOURS} hours, in five-minute steps` });
  new uPlot(
    {
      width: 720,
      height: 220,
      series: [{}, { label: "Requests", stroke: "#1d4ed8", width: 2 }, { label: "Errors (5xx)", stroke: "#b91c1c", width: 2 }],
      axes: [{}, { label: "per 5 min" }],
      scales: { y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
    },
    [times, requests, errors],
    plot,
  );
  return h(
    "section",
    { class: "traffic", "aria-labelledby": "traffic-title" },
    h("h2", { id: "traffic-title" }, `Traffic, last ${HOURS} hours`),
    h("p", { id: "traffic-summary" }, `${total} requests, ${failed} errors (5xx), ${formatBytes(bytes)} served.`),
    plot,
  );
}

function formatBytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${i === 0 ? n : n.toFixed(1)} ${units[i]}`;
}
