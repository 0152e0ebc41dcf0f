import assert from "node:assert/strict";
import { test } from "node:test";
import { Counter, Histogram, Registry } from "prom-client";
import { statusClass } from "../core/metrics/registry.js";
import { EdgeMetrics, type EdgeTrafficArea } from "./metrics.js";

const AREAS: EdgeTrafficArea[] = ["api", "dashboard", "ai_gateway", "s3", "workers", "proxy", "error_page"];
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 100];

/** One request as the dispatch tells it to EdgeMetrics.record. */
type Recorded = [area: EdgeTrafficArea, status: number | undefined, zone: string, seconds: number, bytes: number, cacheStatus?: string];

/**
 * The same metrics counted by prom-client itself, one `inc`/`observe` per request (how the edge counted before
 * its counts moved to arrays): what the exposition must equal.
 */
function referenceCounting(registry: Registry): (...r: Recorded) => void {
  const counter = (name: string, labelNames: string[]) => new Counter({ name: `edgeplatform_${name}`, help: name, labelNames, registers: [registry] });
  const answers = counter("cache_answers_total", ["cache_status"]);
  const answerBytes = counter("cache_answer_bytes_total", ["cache_status"]);
  const originErrors = counter("proxy_origin_errors_total", ["code"]);
  const requests = counter("edge_requests_total", ["area", "status_class", "zone"]);
  const duration = new Histogram({
    name: "edgeplatform_edge_request_duration_seconds",
    help: "d",
    labelNames: ["area"],
    buckets: BUCKETS,
    registers: [registry],
  });
  const bytesOut = counter("edge_response_bytes_total", ["area"]);
  return (area, status, zone, seconds, bytes, cacheStatus) => {
    requests.inc({ area, status_class: status === undefined ? "aborted" : statusClass(status), zone });
    duration.observe({ area }, seconds);
    if (bytes > 0) bytesOut.inc({ area }, bytes);
    if (area !== "proxy") return;
    if (cacheStatus !== undefined) {
      answers.inc({ cache_status: cacheStatus });
      if (bytes > 0) answerBytes.inc({ cache_status: cacheStatus }, bytes);
    }
    if (status !== undefined && status >= 520 && status <= 527) originErrors.inc({ code: String(status) });
  };
}

/** The exposition's samples (no HELP/TYPE lines), sorted: the order of series within a metric is not part of it. */
const samples = async (registry: Registry) =>
  (await registry.metrics())
    .split("\n")
    .filter((l) => l !== "" && !l.startsWith("#"))
    .sort();

/** A deterministic stream of requests covering every area, status class, several zones, cache statuses and 52x. */
function* requests(n: number): Generator<Recorded> {
  let seed = 42;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const statuses = [undefined, 101, 200, 204, 301, 304, 404, 429, 500, 502, 520, 521, 522, 524, 526, 527, 99, 600];
  const caches = [undefined, "HIT", "MISS", "EXPIRED", "STALE", "BYPASS", "REVALIDATED", "UPDATING", "DYNAMIC"];
  const zones = ["", "a.example", "b.example", 'quo"te\\.example', "c.example"];
  for (let i = 0; i < n; i++) {
    const seconds = next() < 0.05 ? 150 * next() : next() ** 4 * 3;
    yield [
      AREAS[Math.floor(next() * AREAS.length)],
      statuses[Math.floor(next() * statuses.length)],
      zones[Math.floor(next() * zones.length)],
      // Some exactly on a bucket's bound (counted in that bucket, le is "less or equal").
      next() < 0.1 ? BUCKETS[Math.floor(next() * BUCKETS.length)] : seconds,
      next() < 0.2 ? 0 : Math.floor(next() * 100_000),
      caches[Math.floor(next() * caches.length)],
    ];
  }
}

test("the edge's metrics, counted in arrays, expose exactly what prom-client's own counting of the same requests does", async () => {
  const registry = new Registry();
  const metrics = new EdgeMetrics(registry);
  const reference = new Registry();
  const count = referenceCounting(reference);
  const empty = await samples(registry);
  assert.deepEqual(empty, [], "nothing counted, no series (as before: a series appears with its first request)");
  let checked = 0;
  for (const r of requests(5_000)) {
    metrics.record(...r);
    count(...r);
    // Scraped in between too: a scrape copies the counts, it never moves or resets them.
    if (++checked % 1_000 === 0) assert.deepEqual(await samples(registry), await samples(reference), `after ${checked} requests`);
  }
  const text = await registry.metrics();
  for (const [name, type] of [
    ["edgeplatform_edge_requests_total", "counter"],
    ["edgeplatform_edge_request_duration_seconds", "histogram"],
    ["edgeplatform_edge_response_bytes_total", "counter"],
    ["edgeplatform_cache_answers_total", "counter"],
    ["edgeplatform_cache_answer_bytes_total", "counter"],
    ["edgeplatform_proxy_origin_errors_total", "counter"],
  ])
    assert.ok(text.includes(`\n# TYPE ${name} ${type}\n`) || text.startsWith(`# HELP ${name} `), `${name} is a ${type}`);
});

test("the edge's metrics after N requests: every request counted once, in its area, class, zone and bucket", async () => {
  const registry = new Registry();
  const metrics = new EdgeMetrics(registry);
  const n = 1_000;
  for (let i = 0; i < n; i++) metrics.record("error_page", 404, "a.example", 0.003, 10);
  for (let i = 0; i < n; i++) metrics.record("proxy", 200, "b.example", 0.2, 0, "HIT");
  metrics.record("proxy", 522, "b.example", 31, 500);
  metrics.record("api", undefined, "", 200, 0);
  const text = await registry.metrics();
  const value = (series: string) => {
    const line = text.split("\n").find((l) => l.startsWith(`${series} `));
    assert.ok(line, `${series} is exposed`);
    return Number(line.slice(line.lastIndexOf(" ") + 1));
  };
  assert.equal(value('edgeplatform_edge_requests_total{area="error_page",status_class="4xx",zone="a.example"}'), n);
  assert.equal(value('edgeplatform_edge_requests_total{area="proxy",status_class="2xx",zone="b.example"}'), n);
  assert.equal(value('edgeplatform_edge_requests_total{area="proxy",status_class="5xx",zone="b.example"}'), 1);
  assert.equal(value('edgeplatform_edge_requests_total{area="api",status_class="aborted",zone=""}'), 1);
  assert.equal(value('edgeplatform_edge_request_duration_seconds_bucket{le="0.0025",area="error_page"}'), 0);
  assert.equal(value('edgeplatform_edge_request_duration_seconds_bucket{le="0.005",area="error_page"}'), n);
  assert.equal(value('edgeplatform_edge_request_duration_seconds_bucket{le="+Inf",area="error_page"}'), n);
  assert.equal(value('edgeplatform_edge_request_duration_seconds_count{area="error_page"}'), n);
  assert.ok(Math.abs(value('edgeplatform_edge_request_duration_seconds_sum{area="error_page"}') - n * 0.003) < 1e-9);
  assert.equal(value('edgeplatform_edge_request_duration_seconds_bucket{le="0.1",area="proxy"}'), 0);
  assert.equal(value('edgeplatform_edge_request_duration_seconds_bucket{le="0.25",area="proxy"}'), n);
  assert.equal(value('edgeplatform_edge_request_duration_seconds_bucket{le="30",area="proxy"}'), n);
  assert.equal(value('edgeplatform_edge_request_duration_seconds_bucket{le="100",area="proxy"}'), n + 1);
  assert.equal(value('edgeplatform_edge_request_duration_seconds_bucket{le="100",area="api"}'), 0, "above every bound");
  assert.equal(value('edgeplatform_edge_request_duration_seconds_bucket{le="+Inf",area="api"}'), 1);
  assert.equal(value('edgeplatform_edge_response_bytes_total{area="error_page"}'), 10 * n);
  assert.equal(value('edgeplatform_edge_response_bytes_total{area="proxy"}'), 500);
  assert.equal(value('edgeplatform_cache_answers_total{cache_status="HIT"}'), n);
  assert.equal(value('edgeplatform_proxy_origin_errors_total{code="522"}'), 1);
  assert.ok(!text.includes('cache_answer_bytes_total{cache_status="HIT"}'), "no bytes, no series");
  assert.ok(!text.includes('area="s3"'), "an area without requests has no series");
  // Counting goes on after a scrape.
  metrics.record("error_page", 404, "a.example", 0.003, 10);
  assert.match(await registry.metrics(), new RegExp(`edgeplatform_edge_requests_total\\{area="error_page",status_class="4xx",zone="a.example"\\} ${n + 1}\\n`));
});
