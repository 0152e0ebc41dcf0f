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

/**
 * A time series of one dataset over the last HOURS hours in five-minute steps: `series` name what is added up per
 * step from each group (`value(g)`), and `summary` says the totals in words. `scale: "usd"` puts a series on a
 * second axis (cost beside tokens).
 */
async function seriesChart({ cls, title, aria, query, variables, groupsOf, series, summary }) {
  const to = Math.floor(Date.now() / 1000);
  const from = Math.floor((to - HOURS * 3600) / STEP) * STEP;
  const data = await graphql(query, {
    ...variables,
    filter: { datetime_geq: new Date(from * 1000).toISOString(), datetime_leq: new Date(to * 1000).toISOString() },
  });
  const groups = groupsOf(data);
  const times = [];
  for (let t = from; t <= to; t += STEP) times.push(t);
  const values = series.map(() => times.map(() => 0));
  const totals = series.map(() => 0);
  for (const g of groups) {
    const i = Math.round((Date.parse(g.dimensions.datetimeFiveMinutes) / 1000 - from) / STEP);
    if (i < 0 || i >= times.length) continue;
    series.forEach((s, k) => {
      const v = s.value(g);
      values[k][i] += v;
      totals[k] += v;
    });
  }
  const secondAxis = series.some((s) => s.scale === "usd");
  const plot = h("div", { class: "chart", role: "img", "aria-label": aria });
  new uPlot(
    {
      width: 720,
      height: 220,
      series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.stroke, width: 2, scale: s.scale ?? "y" }))],
      axes: [{}, { label: "per 5 min" }, ...(secondAxis ? [{ scale: "usd", side: 1, label: "USD", grid: { show: false } }] : [])],
      scales: {
        y: { range: (_u, _min, max) => [0, Math.max(1, max)] },
        ...(secondAxis ? { usd: { range: (_u, _min, max) => [0, Math.max(0.01, max)] } } : {}),
      },
    },
    [times, ...values],
    plot,
  );
  return h(
    "section",
    { class: `chart-section ${cls}`, "aria-labelledby": `${cls}-title` },
    h("h2", { id: `${cls}-title` }, `${title}, last ${HOURS} hours`),
    h("p", { id: `${cls}-summary` }, summary(totals)),
    plot,
  );
}

/** A zone's DNS queries answered, and those answered NXDOMAIN (dnsAnalyticsAdaptiveGroups). */
export function dnsQueriesChart(zoneId) {
  return seriesChart({
    cls: "dns-queries",
    title: "DNS queries",
    aria: `DNS queries of the last ${HOURS} hours, in five-minute steps`,
    query: `query dnsQueries($zoneTag: String, $filter: ZoneDnsAnalyticsAdaptiveGroupsFilter_InputObject) {
      viewer { zones(filter: { zoneTag: $zoneTag }) {
        dnsAnalyticsAdaptiveGroups(limit: 10000, filter: $filter, orderBy: [datetimeFiveMinutes_ASC]) { count dimensions { datetimeFiveMinutes responseCode } }
      } }
    }`,
    variables: { zoneTag: zoneId },
    groupsOf: (d) => d.viewer.zones[0].dnsAnalyticsAdaptiveGroups,
    series: [
      { label: "Queries", stroke: "#047857", value: (g) => g.count },
      { label: "NXDOMAIN", stroke: "#b45309", value: (g) => (g.dimensions.responseCode === "NXDOMAIN" ? g.count : 0) },
    ],
    summary: ([queries, nx]) => `${queries} queries answered, ${nx} of them NXDOMAIN.`,
  });
}

/** The account's Worker invocations and errors (workersInvocationsAdaptive). */
export function workerInvocationsChart(accountId) {
  return seriesChart({
    cls: "invocations",
    title: "Worker invocations",
    aria: `Worker invocations and errors of the last ${HOURS} hours, in five-minute steps`,
    query: `query invocations($accountTag: String, $filter: AccountWorkersInvocationsAdaptiveFilter_InputObject) {
      viewer { accounts(filter: { accountTag: $accountTag }) {
        workersInvocationsAdaptive(limit: 10000, filter: $filter, orderBy: [datetimeFiveMinutes_ASC]) { sum { requests errors } dimensions { datetimeFiveMinutes } }
      } }
    }`,
    variables: { accountTag: accountId },
    groupsOf: (d) => d.viewer.accounts[0].workersInvocationsAdaptive,
    series: [
      { label: "Invocations", stroke: "#1d4ed8", value: (g) => g.sum.requests },
      { label: "Errors", stroke: "#b91c1c", value: (g) => g.sum.errors },
    ],
    summary: ([requests, errors]) => `${requests} invocations, ${errors} errors.`,
  });
}

/** The account's AI gateway tokens (in and out, cached or not) and their cost (aiGatewayRequestsAdaptiveGroups). */
export function gatewayUsageChart(accountId) {
  return seriesChart({
    cls: "gateway-usage",
    title: "AI gateway tokens and cost",
    aria: `AI gateway tokens and cost of the last ${HOURS} hours, in five-minute steps`,
    query: `query gatewayUsage($accountTag: String, $filter: AccountAiGatewayRequestsAdaptiveGroupsFilter_InputObject) {
      viewer { accounts(filter: { accountTag: $accountTag }) {
        aiGatewayRequestsAdaptiveGroups(limit: 10000, filter: $filter, orderBy: [datetimeFiveMinutes_ASC]) {
          count sum { cost cachedRequests cachedTokensIn cachedTokensOut uncachedTokensIn uncachedTokensOut } dimensions { datetimeFiveMinutes }
        }
      } }
    }`,
    variables: { accountTag: accountId },
    groupsOf: (d) => d.viewer.accounts[0].aiGatewayRequestsAdaptiveGroups,
    series: [
      { label: "Tokens in", stroke: "#7c3aed", value: (g) => g.sum.uncachedTokensIn + g.sum.cachedTokensIn },
      { label: "Tokens out", stroke: "#0e7490", value: (g) => g.sum.uncachedTokensOut + g.sum.cachedTokensOut },
      { label: "Cost (USD)", stroke: "#b45309", scale: "usd", value: (g) => g.sum.cost },
      { label: "Requests", stroke: "#475569", value: (g) => g.count },
    ],
    summary: ([tin, tout, cost, requests]) => `${requests} requests, ${tin} tokens in, ${tout} tokens out, $${cost.toFixed(6)} estimated cost.`,
  });
}
