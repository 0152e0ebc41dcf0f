import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { TestPlatform } from "../../core/testing/platform.js";
import { eventually } from "../../core/testing/eventually.js";
import { withTempDir } from "../../core/testing/temp-dir.js";
import { createAccount, hit, startPlatform, uploadScript } from "../testing/helpers.js";
import { runWrangler, wranglerSucceeded, wranglerVersions } from "../testing/wrangler.js";

/**
 * Workers Logs end to end: Workers deployed with `[observability]` by wrangler and `edgecli deploy` on the real
 * platform and workerd, their invocations and console lines kept and read back through the hosted query API.
 */

let p: TestPlatform;
before(async () => {
  p = await startPlatform();
});
after(async () => {
  await p?.dispose();
});

const HANG_GUARD = { timeout: 240_000 };

const WORKER = `export default {
  async fetch(req) {
    const url = new URL(req.url);
    console.log("visit", url.pathname, { n: 1 });
    console.warn("careful");
    if (url.pathname === "/boom") throw new Error("kaboom");
    return new Response("hi", { status: url.pathname === "/teapot" ? 418 : 200 });
  },
};
`;

const telemetry = (account = p.accountId) => `/accounts/${account}/workers/observability/telemetry`;
const lastHour = () => ({ from: Date.now() - 3600_000, to: Date.now() + 60_000 });

/** The events view of a query, as the hosted API answers it. */
async function events(filters: unknown[], opts: { account?: string; headers?: Record<string, string>; limit?: number; offset?: string } = {}) {
  const r = await p.api(
    "POST",
    `${telemetry(opts.account)}/query`,
    { queryId: "test", timeframe: lastHour(), view: "events", limit: opts.limit ?? 100, offset: opts.offset, parameters: { filters } },
    opts.headers,
  );
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.result as { events: { events: any[]; count: number }; run: any; statistics: any };
}

const service = (name: string) => ({ key: "$metadata.service", operation: "eq", type: "string", value: name });

for (const version of wranglerVersions()) {
  test(`wrangler ${version} deploy with [observability]: each invocation and its console lines are kept and queryable`, HANG_GUARD, async () => {
    const name = `logs-w${version}`;
    await withTempDir("wlogs-", async (cwd) => {
      writeFileSync(join(cwd, "index.js"), WORKER);
      writeFileSync(
        join(cwd, "wrangler.toml"),
        `name = "${name}"\nmain = "index.js"\ncompatibility_date = "2024-09-01"\n[observability]\nenabled = true\nhead_sampling_rate = 1\n`,
      );
      wranglerSucceeded(await runWrangler(p, ["deploy"], { cwd, version }));
    });
    const settings = await p.api("GET", `/accounts/${p.accountId}/workers/scripts/${name}/script-settings`);
    assert.deepEqual(settings.body.result.observability, { enabled: true, head_sampling_rate: 1 });

    assert.equal((await hit(p, name, "/teapot?x=1")).status, 418);
    assert.equal((await hit(p, name, "/boom", { method: "POST", body: "x" })).status, 500);
    // Two invocations: each its own event and two lines, the second also its exception.
    await eventually(async () => (await events([service(name)])).events.count >= 7, "the invocations' events", 60_000);
    const list = (await events([service(name)])).events.events;
    const invocation = list.find((e) => e.$metadata.type === "cf-worker-event" && e.$metadata.url?.endsWith("/teapot?x=1"));
    assert.ok(invocation, JSON.stringify(list));
    assert.equal(invocation.$metadata.statusCode, 418);
    assert.equal(invocation.$metadata.trigger, "GET /teapot");
    assert.equal(invocation.$workers.outcome, "ok");
    assert.equal(invocation.$workers.event.request.method, "GET");
    assert.equal(invocation.$workers.scriptName, name);
    assert.equal(invocation.dataset, "cloudflare-workers");
    assert.equal(typeof invocation.timestamp, "number");
    assert.equal(typeof invocation.$metadata.duration, "number", "the invocation's wall time");
    const lines = list.filter((e) => e.$metadata.requestId === invocation.$metadata.requestId && e.$metadata.type === "cf-worker");
    assert.deepEqual(lines.map((e) => [e.$metadata.level, e.$metadata.message]).sort(), [
      ["log", 'visit /teapot {"n":1}'],
      ["warn", "careful"],
    ]);
    const failed = list.find((e) => e.$metadata.type === "cf-worker-event" && e.$workers.outcome === "exception");
    assert.equal(failed.$metadata.error, "Error: kaboom");
    assert.equal(failed.$workers.event.request.method, "POST");

    // Filters, the needle, and the invocations view grouping an invocation's events.
    const warned = await events([service(name), { key: "$metadata.level", operation: "eq", type: "string", value: "warn" }]);
    assert.equal(warned.events.events.length, 2);
    const byNeedle = await p.api("POST", `${telemetry()}/query`, {
      queryId: "needle",
      timeframe: lastHour(),
      view: "invocations",
      parameters: { filters: [service(name)], needle: { value: "KABOOM" } },
    });
    assert.equal(byNeedle.status, 200, JSON.stringify(byNeedle.body));
    const invocations = Object.values(byNeedle.body.result.invocations) as any[][];
    assert.equal(invocations.length, 1);
    assert.ok(invocations[0]!.some((e) => e.$metadata.type === "cf-worker-event"));
    assert.ok(
      invocations[0]!.some((e) => e.$metadata.message === "careful"),
      "every event of the invocation, not only the matching one",
    );

    const keys = await p.api("POST", `${telemetry()}/keys`, { filters: [service(name)] });
    assert.equal(keys.status, 200);
    assert.ok(keys.body.result.some((k: any) => k.key === "$metadata.statusCode" && k.type === "number"));
    const values = await p.api("POST", `${telemetry()}/values`, {
      datasets: ["cloudflare-workers"],
      key: "$workers.event.request.method",
      type: "string",
      timeframe: lastHour(),
      filters: [service(name)],
    });
    assert.equal(values.status, 200);
    assert.deepEqual(values.body.result.map((v: any) => v.value).sort(), ["GET", "POST"]);
  });
}

test(
  "edgecli deploy with [observability]: head_sampling_rate 0 keeps nothing, 1 keeps all, and observability off (the default) keeps nothing",
  HANG_GUARD,
  async () => {
    const deploy = (name: string, observability: string) =>
      withTempDir("wlogs-cli-", async (cwd) => {
        writeFileSync(join(cwd, "index.js"), WORKER);
        writeFileSync(join(cwd, "wrangler.toml"), `name = "${name}"\nmain = "index.js"\ncompatibility_date = "2024-09-01"\n${observability}`);
        const r = await p.cli(["deploy"], { cwd });
        assert.equal(r.code, 0, r.stderr);
      });
    await deploy("logs-all", "[observability]\nenabled = true\n[observability.logs]\nhead_sampling_rate = 1\n");
    await deploy("logs-none", "[observability]\nenabled = true\nhead_sampling_rate = 0\n");
    await deploy("logs-off", "");
    assert.deepEqual((await p.api("GET", `/accounts/${p.accountId}/workers/scripts/logs-off/script-settings`)).body.result.observability, { enabled: false });

    for (let i = 0; i < 5; i++) {
      for (const name of ["logs-none", "logs-off", "logs-all"]) assert.equal((await hit(p, name, `/n${i}`)).status, 200);
    }
    // The sampled Worker's invocations were written after the others': once they are all there, nothing else comes.
    await eventually(
      async () =>
        (await events([service("logs-all"), { key: "$metadata.type", operation: "eq", type: "string", value: "cf-worker-event" }])).events.count === 5,
      "5 invocations of logs-all",
      60_000,
    );
    await new Promise((resolve) => setTimeout(resolve, 1_000)); // one more write of the batcher (250 ms)
    assert.equal((await events([service("logs-none")])).events.count, 0);
    assert.equal((await events([service("logs-off")])).events.count, 0);

    // Turning logs off through script-settings (what `wrangler versions deploy` sends) stops keeping them.
    const off = await p.api("PATCH", `/accounts/${p.accountId}/workers/scripts/logs-all/script-settings`, { observability: { enabled: false } });
    assert.equal(off.status, 200, JSON.stringify(off.body));
    assert.deepEqual(off.body.result.observability, { enabled: false });
    await hit(p, "logs-all", "/after-off");
    await hit(p, "logs-all", "/after-off");
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    assert.equal((await events([service("logs-all"), { key: "$metadata.url", operation: "ends_with", type: "string", value: "/after-off" }])).events.count, 0);
  },
);

test("two accounts: each reads its own Workers' logs only", HANG_GUARD, async () => {
  const other = await createAccount(p, "Logs neighbour");
  const minted = await p.api("POST", "/user/tokens", { name: "logs-other", permissions: ["workers_edit"], account_id: other }, p.keyHeaders());
  assert.equal(minted.status, 200, JSON.stringify(minted.body));
  const theirs = { authorization: `Bearer ${minted.body.result.value}` };
  const on = { observability: { enabled: true } };
  assert.equal((await uploadScript(p, "logs-mine", WORKER, on)).status, 200);
  assert.equal((await uploadScript(p, "logs-theirs", WORKER, on, { accountId: other, headers: theirs })).status, 200);
  await hit(p, "logs-mine", "/mine-only");
  await hit(p, "logs-theirs", "/theirs-only");
  await eventually(async () => (await events([service("logs-mine")])).events.count > 0, "my events", 60_000);
  await eventually(async () => (await events([], { account: other, headers: theirs })).events.count > 0, "their events", 60_000);

  const mine = JSON.stringify((await events([])).events.events);
  const their = (await events([], { account: other, headers: theirs })).events.events;
  assert.ok(!mine.includes("theirs-only"), "my query shows none of their events");
  assert.ok(their.length > 0 && their.every((e) => e.$metadata.service === "logs-theirs" && e.$metadata.account === other));
  // Their token does not reach my account's logs, nor a filter on my Worker's name theirs.
  const denied = await p.api("POST", `${telemetry()}/query`, { queryId: "x", timeframe: lastHour() }, theirs);
  assert.equal(denied.status, 403, JSON.stringify(denied.body));
  assert.equal((await events([service("logs-mine")], { account: other, headers: theirs })).events.count, 0);
  // A cursor of my account's events reads nothing of mine from theirs.
  const cursor = (await events([service("logs-mine")])).events.events[0].$metadata.id;
  assert.equal((await events([], { account: other, headers: theirs, offset: cursor })).events.events.length, 0);
});

test(
  "head_sampling_rate 0.5: about half of the invocations are kept, each whole (its event and its lines), drawn once by the tail worker",
  HANG_GUARD,
  async () => {
    assert.equal((await uploadScript(p, "logs-half", WORKER, { observability: { enabled: true, head_sampling_rate: 0.5 } })).status, 200);
    const N = 100;
    for (let i = 0; i < N; i++) assert.equal((await hit(p, "logs-half", `/h${i}`)).status, 200);
    // A marker Worker at rate 1 invoked last: once its event is kept, the sampled Worker's batches have arrived too.
    assert.equal((await uploadScript(p, "logs-half-marker", WORKER, { observability: { enabled: true } })).status, 200);
    await hit(p, "logs-half-marker", "/done");
    await eventually(async () => (await events([service("logs-half-marker")])).events.count > 0, "the marker's events", 60_000);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const kept = (await events([service("logs-half")], { limit: 1000 })).events;
    const invocations = kept.events.filter((e) => e.$metadata.type === "cf-worker-event");
    // 50 expected; 30–70 is over four standard deviations either way. Sampled twice (by the tail worker, then again by
    // the platform) it would be about 25.
    assert.ok(invocations.length >= 30 && invocations.length <= 70, `${invocations.length} of ${N} invocations kept at rate 0.5`);
    // Every kept invocation has its two console lines, and no line is kept without its invocation.
    assert.equal(kept.count, invocations.length * 3);
    const ids = new Set(invocations.map((e) => e.$metadata.requestId));
    assert.ok(kept.events.every((e) => ids.has(e.$metadata.requestId)));
  },
);

test("bad queries are refused with a 400 in the envelope naming what is wrong", HANG_GUARD, async () => {
  const now = Date.now();
  const cases: [unknown, RegExp][] = [
    [{ queryId: "q", timeframe: { from: now - 40 * 86_400_000, to: now } }, /at most 31 days/],
    [{ queryId: "q", timeframe: { from: now, to: now - 1 } }, /from must be earlier than to/],
    [
      { queryId: "q", timeframe: lastHour(), parameters: { filters: [{ key: "$metadata.nope", operation: "eq", type: "string", value: "x" }] } },
      /"\$metadata.nope" is not a field/,
    ],
    [
      { queryId: "q", timeframe: lastHour(), parameters: { filters: [{ key: "$metadata.statusCode", operation: "eq", type: "string", value: "x" }] } },
      /number field/,
    ],
    [
      { queryId: "q", timeframe: lastHour(), parameters: { filters: [{ key: "$metadata.message", operation: "regex", type: "string", value: ".*" }] } },
      /regex/,
    ],
    [{ queryId: "q", timeframe: lastHour(), parameters: { needle: { value: "a.*", isRegex: true } } }, /regular expression/],
    [{ queryId: "q", timeframe: lastHour(), view: "calculations" }, /the view "calculations" is not available/],
    [{ queryId: "q", timeframe: lastHour(), parameters: { calculations: [{ operator: "count" }] } }, /calculations is not available/],
    [{ queryId: "q", timeframe: lastHour(), parameters: { datasets: ["otel"] } }, /dataset "otel"/],
    [{ queryId: "q", timeframe: lastHour(), unknownField: 1 }, /unknownField|Unrecognized/i],
    [{ queryId: "q", timeframe: lastHour(), limit: 1_000_000 }, /limit/],
    [{ queryId: "q", timeframe: lastHour(), offset: "'; DROP TABLE events; --" }, /offset/],
    [{ timeframe: lastHour() }, /queryId/],
  ];
  for (const [body, message] of cases) {
    const r = await p.api("POST", `${telemetry()}/query`, body);
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.equal(r.body.success, false);
    assert.equal(r.body.errors[0].code, 10021);
    assert.match(r.body.errors[0].message, message, JSON.stringify(r.body.errors[0]));
  }
  const deep = {
    kind: "group",
    filterCombination: "and",
    filters: [
      {
        kind: "group",
        filterCombination: "and",
        filters: [{ kind: "group", filterCombination: "and", filters: [{ kind: "group", filterCombination: "and", filters: [] }] }],
      },
    ],
  };
  assert.equal((await p.api("POST", `${telemetry()}/query`, { queryId: "q", timeframe: lastHour(), parameters: { filters: [deep] } })).status, 400);
  const values = await p.api("POST", `${telemetry()}/values`, { datasets: [], key: "$metadata.secret", type: "string", timeframe: lastHour() });
  assert.equal(values.status, 400);
  const keys = await p.api("POST", `${telemetry()}/keys`, { from: 0, to: Date.now() });
  assert.equal(keys.status, 400);
  // Settings this platform does not have are refused at upload, never kept off in silence.
  const traces = await uploadScript(p, "logs-traces", WORKER, { observability: { enabled: true, traces: { enabled: true } } });
  assert.equal(traces.status, 400);
  assert.equal(traces.body.errors[0].source?.pointer, "/observability/traces/enabled");
});

test("events older than the retention are removed (--workers-logs-retention-days)", HANG_GUARD, async () => {
  // 0.0001 days: 8.64 s, pruned every 4.32 s.
  const short = await startPlatform(["--workers-logs-retention-days", "0.0001"]);
  try {
    assert.equal((await uploadScript(short, "logs-short", WORKER, { observability: { enabled: true } })).status, 200);
    await hit(short, "logs-short", "/soon-gone");
    const query = async () => {
      const r = await short.api("POST", `/accounts/${short.accountId}/workers/observability/telemetry/query`, { queryId: "r", timeframe: lastHour() });
      return r.body.result.events.count as number;
    };
    await eventually(async () => (await query()) > 0, "the events kept", 60_000);
    await eventually(async () => (await query()) === 0, "the events removed after the retention", 60_000);
  } finally {
    await short.dispose();
  }
});
