import assert from "node:assert/strict";
import { storeContract } from "../../core/testing/contract.js";
import { parseKeys, parseQuery, parseValues } from "./query.js";
import type { LogsStore, NewLogEvent } from "./store.js";

const A = "a".repeat(32);
const B = "b".repeat(32);
const T0 = 1_700_000_000_000;
const BIG = { rows: 1_000_000, bytes: 1 << 30 };

const event = (accountId: string, n: number, over: Partial<NewLogEvent> = {}): NewLogEvent => ({
  accountId,
  script: "w",
  requestId: `r${n}`,
  timestamp: T0 + n * 1000,
  type: "cf-worker-event",
  level: "info",
  message: `GET /p${n}`,
  outcome: "ok",
  statusCode: 200,
  duration: n,
  method: "GET",
  url: `http://w.example/p${n}`,
  trigger: `GET /p${n}`,
  origin: "fetch",
  body: { source: { n }, workers: { scriptName: "w" } },
  ...over,
});

const query = (filters: unknown[] = [], extra: Record<string, unknown> = {}) =>
  parseQuery({ queryId: "q", timeframe: { from: T0, to: T0 + 86_400_000 }, parameters: { filters }, ...extra }).query;

export const describeLogsStore = storeContract<LogsStore>("LogsStore", (it) => {
  it("a setting is kept per account and Worker, and removed", async (store) => {
    await store.setSetting(A, "w", { enabled: true, head_sampling_rate: 0.5 });
    await store.setSetting(B, "x", { enabled: true });
    assert.deepEqual(await store.setting(A, "w"), { enabled: true, head_sampling_rate: 0.5 });
    assert.equal(await store.setting(B, "w"), undefined);
    assert.equal((await store.settings()).length, 2);
    await store.setSetting(A, "w", undefined);
    assert.equal(await store.setting(A, "w"), undefined);
  });

  it("events are read newest first, page by page, and only by their account", async (store) => {
    await store.append(
      [1, 2, 3, 4, 5].map((n) => event(A, n)),
      BIG,
    );
    await store.append([event(B, 6, { script: "theirs" })], BIG);
    const first = await store.events(A, { ...query(), limit: 2 });
    assert.deepEqual(
      first.events.map((e) => e.message),
      ["GET /p5", "GET /p4"],
    );
    assert.equal(first.count, 5);
    const next = await store.events(A, { ...query(), limit: 2, after: Number(first.events[1]!.id) });
    assert.deepEqual(
      next.events.map((e) => e.message),
      ["GET /p3", "GET /p2"],
    );
    assert.equal((await store.events(B, query())).count, 1);
    // Another account's cursor reads nothing.
    assert.equal((await store.events(B, { ...query(), after: Number(first.events[0]!.id) })).events.length, 0);
    const e = first.events[0]!;
    assert.equal(e.statusCode, 200);
    assert.equal(e.duration, 5);
    assert.deepEqual(e.body, { source: { n: 5 }, workers: { scriptName: "w" } });
  });

  it("filters, groups and the needle select events; user values are parameters", async (store) => {
    await store.append(
      [
        event(A, 1, { statusCode: 500, outcome: "exception", error: "Error: x" }),
        event(A, 2, { statusCode: 404, method: "POST" }),
        event(A, 3, { type: "cf-worker", level: "warn", message: "O'Brien said 100%_done", statusCode: undefined }),
      ],
      BIG,
    );
    const messages = async (filters: unknown[], extra: Record<string, unknown> = {}) =>
      (await store.events(A, query(filters, extra))).events.map((e) => e.message).sort();
    assert.deepEqual(await messages([{ key: "$metadata.statusCode", operation: "gte", type: "number", value: 404 }]), ["GET /p1", "GET /p2"]);
    assert.deepEqual(await messages([{ key: "$metadata.message", operation: "includes", type: "string", value: "100%_" }]), ["O'Brien said 100%_done"]);
    assert.deepEqual(await messages([{ key: "$metadata.message", operation: "includes", type: "string", value: "%" }]), ["O'Brien said 100%_done"]);
    assert.deepEqual(await messages([{ key: "$metadata.message", operation: "starts_with", type: "string", value: "O'B" }]), ["O'Brien said 100%_done"]);
    assert.deepEqual(await messages([{ key: "$metadata.message", operation: "ends_with", type: "string", value: "_done" }]), ["O'Brien said 100%_done"]);
    assert.deepEqual(await messages([{ key: "$metadata.statusCode", operation: "is_null", type: "number" }]), ["O'Brien said 100%_done"]);
    assert.deepEqual(await messages([{ key: "$workers.event.request.method", operation: "in", type: "string", value: "POST, PUT" }]), ["GET /p2"]);
    assert.deepEqual(
      await messages(
        [
          { key: "$workers.outcome", operation: "eq", type: "string", value: "exception" },
          { key: "$metadata.level", operation: "eq", type: "string", value: "warn" },
        ],
        {},
      ),
      [],
    );
    const either = parseQuery({
      queryId: "q",
      timeframe: { from: T0, to: T0 + 86_400_000 },
      parameters: {
        filters: [
          {
            kind: "group",
            filterCombination: "or",
            filters: [
              { key: "$workers.outcome", operation: "eq", type: "string", value: "exception" },
              { key: "$metadata.level", operation: "eq", type: "string", value: "warn" },
            ],
          },
        ],
      },
    }).query;
    assert.deepEqual((await store.events(A, either)).events.map((e) => e.message).sort(), ["GET /p1", "O'Brien said 100%_done"]);
    assert.deepEqual(await messages([], { parameters: { needle: { value: "o'brien" } } }), ["O'Brien said 100%_done"]);
    assert.deepEqual(await messages([], { parameters: { needle: { value: "o'brien", matchCase: true } } }), []);
  });

  it("invocations: every event of the newest invocations with a match", async (store) => {
    await store.append(
      [
        event(A, 1, { requestId: "one" }),
        event(A, 2, { requestId: "one", type: "cf-worker", level: "log", message: "needle" }),
        event(A, 3, { requestId: "two" }),
      ],
      BIG,
    );
    const got = await store.invocations(A, query([{ key: "$metadata.message", operation: "eq", type: "string", value: "needle" }]));
    assert.deepEqual(
      got.map((e) => [e.requestId, e.message]),
      [
        ["one", "GET /p1"],
        ["one", "needle"],
      ],
    );
    assert.deepEqual(await store.invocations(B, query()), []);
  });

  it("keys and values come from the account's events", async (store) => {
    await store.append([event(A, 1), event(A, 2, { method: "POST" })], BIG);
    await store.append([event(B, 3, { method: "DELETE" })], BIG);
    const keys = await store.keys(A, parseKeys({ from: T0, to: T0 + 86_400_000 }, T0, 86_400_000).query);
    assert.ok(keys.some((k) => k.key === "$metadata.statusCode" && k.type === "number" && k.lastSeenAt === T0 + 2000));
    assert.ok(!keys.some((k) => k.key === "$metadata.error"), "no event has an error");
    const v = parseValues({ datasets: [], key: "$workers.event.request.method", type: "string", timeframe: { from: T0, to: T0 + 86_400_000 } });
    assert.deepEqual((await store.values(A, v.query)).sort(), ["GET", "POST"]);
  });

  it("an account over its cap loses its oldest events, and another account none", async (store) => {
    await store.append(
      [1, 2, 3].map((n) => event(B, n)),
      BIG,
    );
    for (let n = 1; n <= 10; n++) await store.append([event(A, n)], { rows: 4, bytes: 1 << 30 });
    assert.deepEqual(
      (await store.events(A, query())).events.map((e) => e.message),
      ["GET /p10", "GET /p9", "GET /p8", "GET /p7"],
    );
    assert.equal((await store.usage(A)).rows, 4);
    assert.equal((await store.events(B, query())).count, 3);
    // By bytes too: an event is a few hundred bytes.
    const one = (await store.usage(A)).bytes / 4;
    await store.append([event(A, 11)], { rows: 1000, bytes: Math.ceil(one * 2) });
    assert.ok((await store.usage(A)).rows <= 2);
    assert.equal((await store.events(A, query())).events[0]!.message, "GET /p11");
  });

  it("prune removes what is older than the retention, of every account, and counts again", async (store) => {
    await store.append(
      [1, 2, 3].map((n) => event(A, n)),
      BIG,
    );
    await store.append(
      [1, 5].map((n) => event(B, n)),
      BIG,
    );
    assert.equal(await store.prune(T0 + 2500), 3);
    assert.deepEqual(
      (await store.events(A, query())).events.map((e) => e.message),
      ["GET /p3"],
    );
    assert.equal((await store.events(B, query())).count, 1);
    assert.equal((await store.usage(A)).rows, 1);
    assert.equal((await store.usage(B)).rows, 1);
  });
});
