import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { connect, createServer, type Socket } from "node:net";
import { test } from "node:test";
import { request } from "undici";
import { eventually } from "../core/testing/eventually.js";
import { startTestPlatform } from "../core/testing/platform.js";
import { skipReason } from "../core/testing/services.js";
import { createAccount } from "../workers/testing/helpers.js";
import { loopbackBlock, startOrigin } from "./testing/origins.js";

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });

const promtool = (input: string) =>
  new Promise<{ code: number; out: string }>((resolve) => {
    const child = execFile("promtool", ["check", "metrics"], (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: `${stdout}${stderr}` }),
    );
    child.stdin!.end(input);
  });

const promtoolMissing = () =>
  new Promise<string | undefined>((resolve) =>
    execFile("promtool", ["--version"], (err) => resolve(err ? "promtool is not installed (Debian package prometheus)" : undefined)),
  );

/** A sample's value from the exposition text, by its name and exact labels (in the order prom-client writes them). */
function sample(text: string, name: string, labels: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${name}{${labels}} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
}

test("the metrics listener serves the edge's requests by area, status class and zone, in a format promtool accepts", async (t) => {
  const port = await freePort();
  const address = loopbackBlock();
  await startOrigin(t, { address: address(1), name: "metrics" });
  const p = await startTestPlatform({ args: ["--metrics-port", String(port), "--origin-allow", "127.0.0.0/8", "--origin-connect-timeout", "2"] });
  t.after(() => p.stop());
  const metricsUrl = `http://127.0.0.1:${port}/metrics`;
  assert.equal(p.endpoints.metrics, metricsUrl, "the banner names the listener");

  // Zones of two accounts: each is its own label; a tenant's hostname is never a label, its zone is.
  const other = await createAccount(p, "metrics-other");
  for (const [name, account] of [
    ["metrics-a.example", p.accountId],
    ["metrics-b.example", other],
  ]) {
    const created = await p.api("POST", "/zones", { name, account: { id: account } }, p.keyHeaders());
    assert.equal(created.status, 200, JSON.stringify(created.body));
  }
  const edge = (host: string, path = "/") => request(`${p.url}${path}`, { headers: { host } }).then((r) => r.body.text().then(() => r.statusCode));
  // No record: the edge's own error page, counted against the zone.
  for (let i = 0; i < 3; i++) assert.equal(await edge("www.metrics-a.example", `/page-${i}`), 404);
  // Many requests to one zone: each counted once (a count lost or doubled on the way to the exposition fails here).
  const many = 60;
  await Promise.all(Array.from({ length: many }, () => edge("metrics-b.example"))).then((s) => assert.deepEqual(new Set(s), new Set([404])));
  // The proxy: a static file missed then hit in the cache; a record whose origin refuses connections (521).
  const zoneA = (await p.api("GET", "/zones?name=metrics-a.example")).body.result[0].id;
  for (const [name, content] of [
    ["static", address(1)],
    ["down", address(2)],
  ]) {
    const r = await p.api("POST", `/zones/${zoneA}/dns_records`, { type: "A", name, content, proxied: true });
    assert.equal(r.status, 200, JSON.stringify(r.body));
  }
  assert.equal(await edge("static.metrics-a.example", "/site.css"), 200);
  assert.equal(await edge("static.metrics-a.example", "/site.css"), 200);
  assert.equal(await edge("down.metrics-a.example", "/"), 521);
  assert.equal((await p.api("GET", "/user/tokens/verify")).status, 200);
  assert.equal((await p.api("GET", "/zones/not-a-zone")).status >= 400, true);

  const res = await request(metricsUrl);
  assert.equal(res.statusCode, 200);
  assert.match(String(res.headers["content-type"]), /^text\/plain; version=0\.0\.4/);
  const text = await res.body.text();
  assert.equal(sample(text, "edgeplatform_edge_requests_total", 'area="error_page",status_class="4xx",zone="metrics-a.example"'), 3);
  assert.equal(sample(text, "edgeplatform_edge_requests_total", 'area="error_page",status_class="4xx",zone="metrics-b.example"'), many);
  assert.ok((sample(text, "edgeplatform_edge_requests_total", 'area="api",status_class="2xx",zone=""') ?? 0) >= 1, "the API's answers");
  assert.ok((sample(text, "edgeplatform_edge_requests_total", 'area="api",status_class="4xx",zone=""') ?? 0) >= 1, "the API's refusals");
  assert.ok(!text.includes("www.metrics-a.example") && !text.includes("page-1"), "no hostname or path becomes a label");
  assert.equal(sample(text, "edgeplatform_edge_request_duration_seconds_count", 'area="error_page"'), 3 + many, "the 404s (the 521 is the proxy's)");
  assert.equal(sample(text, "edgeplatform_edge_request_duration_seconds_bucket", 'le="+Inf",area="error_page"'), 3 + many);
  assert.equal(sample(text, "edgeplatform_cache_answers_total", 'cache_status="MISS"'), 1);
  assert.equal(sample(text, "edgeplatform_cache_answers_total", 'cache_status="HIT"'), 1);
  assert.equal(sample(text, "edgeplatform_proxy_origin_errors_total", 'code="521"'), 1);
  assert.ok((sample(text, "edgeplatform_cache_answer_bytes_total", 'cache_status="HIT"') ?? 0) > 0);
  assert.ok(text.includes("edgeplatform_process_resident_memory_bytes "), "the process' own health");
  assert.ok(text.includes("edgeplatform_nodejs_eventloop_lag_seconds "));

  // The open connections gauge: connections held open on the edge port are counted until they close.
  const gauge = async (listener: string) =>
    sample(await request(metricsUrl).then((r) => r.body.text()), "edgeplatform_edge_open_connections", `listener="${listener}"`);
  assert.equal(await gauge("https"), 0, "no HTTPS port, no connections on it");
  // Each held connection has had an answer on it (so the edge has surely counted it) and stays open (keep-alive).
  const edgeUrl = new URL(p.url);
  const held = await Promise.all(
    Array.from(
      { length: 5 },
      () =>
        new Promise<Socket>((resolve, reject) => {
          const socket = connect(Number(edgeUrl.port), edgeUrl.hostname, () => socket.write("GET / HTTP/1.1\r\nHost: metrics-b.example\r\n\r\n"));
          socket.once("data", () => resolve(socket)).once("error", reject);
        }),
    ),
  );
  const withHeld = (await gauge("http")) ?? 0;
  assert.ok(withHeld >= 5, `the 5 held connections counted (${withHeld})`);
  for (const s of held) s.destroy();
  let afterClose: number | undefined;
  // Other connections may close meanwhile (undici's kept-alive ones), none opens: at most withHeld - 5 then.
  await eventually(async () => (afterClose = (await gauge("http")) ?? 0) <= withHeld - 5, "the 5 closed connections no longer counted").catch((err: Error) => {
    throw new Error(`${err.message}: ${withHeld} with them, ${afterClose} after`);
  });

  // Only GET /metrics; the edge port does not serve them.
  assert.equal((await request(`http://127.0.0.1:${port}/other`)).statusCode, 404);
  const onEdge = await request(`${p.url}/metrics`);
  assert.ok(!(await onEdge.body.text()).includes("edgeplatform_"), "the edge port never serves the platform's numbers");

  const missing = await promtoolMissing();
  const skip = missing === undefined ? false : skipReason({ available: false, reason: missing });
  if (skip) return t.skip(skip);
  const checked = await promtool(text);
  assert.equal(checked.code, 0, checked.out);
});

test("--metrics-port 0 turns the listener off, and a bad port is refused at start", async (t) => {
  const p = await startTestPlatform();
  t.after(() => p.stop());
  assert.equal(p.endpoints.metrics, undefined);
  const bad = await p.cli(["serve", "--metrics-port", "70000", "--state-dir", `${p.stateDir}-bad`]);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /--metrics-port must be a port from 1 to 65535, or 0 for none; got 70000/);
});
