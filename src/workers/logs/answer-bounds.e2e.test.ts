import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { TestPlatform } from "../../core/testing/platform.js";
import { eventually } from "../../core/testing/eventually.js";
import { createAccount, hit, startPlatform, uploadScript } from "../testing/helpers.js";
import { MAX_ANSWER_EVENTS } from "./query.js";

/**
 * A tenant's Workers Logs query cannot make the platform hold an unbounded answer: the invocations view of the
 * newest 2,000 invocations, each with up to 256 console lines, answers at most MAX_ANSWER_EVENTS events (it answered
 * every event of every invocation: 500,000 rows, up to the account's whole 256 MiB, read at once). Two accounts: the
 * other one reads none of it.
 */
let p: TestPlatform;
before(async () => {
  p = await startPlatform();
});
after(async () => {
  await p?.dispose();
});

const LINES = 300;
const INVOCATIONS = 9;
const WORKER = `export default {
  async fetch(req) {
    for (let i = 0; i < ${LINES}; i++) console.log("line", i, new URL(req.url).pathname);
    return new Response("logged");
  },
};
`;
const telemetry = (account: string) => `/accounts/${account}/workers/observability/telemetry/query`;
const lastHour = () => ({ from: Date.now() - 3600_000, to: Date.now() + 60_000 });
const service = { key: "$metadata.service", operation: "eq", type: "string", value: "logs-chatty" };

test(
  "the invocations view answers at most MAX_ANSWER_EVENTS events, the newest invocation whole; another account reads none",
  { timeout: 240_000 },
  async () => {
    assert.equal((await uploadScript(p, "logs-chatty", WORKER, { observability: { enabled: true } })).status, 200);
    for (let i = 0; i < INVOCATIONS; i++) assert.equal((await hit(p, "logs-chatty", `/n${i}`)).status, 200);
    // Each invocation keeps its event and its first 256 lines: more than one answer may carry in all.
    const kept = INVOCATIONS * 257;
    assert.ok(kept > MAX_ANSWER_EVENTS);
    await eventually(
      async () => {
        const r = await p.api("POST", telemetry(p.accountId), {
          queryId: "q",
          timeframe: lastHour(),
          view: "events",
          limit: 1,
          parameters: { filters: [service] },
        });
        return r.body.result.events.count >= kept;
      },
      "every invocation's events kept",
      120_000,
    );
    const r = await p.api("POST", telemetry(p.accountId), {
      queryId: "q",
      timeframe: lastHour(),
      view: "invocations",
      limit: 2000,
      parameters: { filters: [service] },
    });
    assert.equal(r.status, 200, JSON.stringify(r.body).slice(0, 500));
    const invocations = Object.values(r.body.result.invocations) as { $metadata: { type: string; url?: string; message: string } }[][];
    const answered = invocations.reduce((n, list) => n + list.length, 0);
    assert.ok(answered <= MAX_ANSWER_EVENTS, `${answered} events answered; at most ${MAX_ANSWER_EVENTS}`);
    assert.ok(answered >= MAX_ANSWER_EVENTS - 257, `the answer is filled up to its bound (${answered})`);
    // The newest invocation is there whole: its own event and every line kept of it.
    const newest = invocations.find((list) => list.some((e) => e.$metadata.type === "cf-worker-event" && e.$metadata.url?.endsWith(`/n${INVOCATIONS - 1}`)));
    assert.ok(newest, "the newest invocation is answered");
    assert.equal(newest.length, 257);

    const other = await createAccount(p, "logs-other");
    const token = await p.api("POST", "/user/tokens", { name: "o", permissions: ["workers_read"], account_id: other }, p.keyHeaders());
    const theirs = { authorization: `Bearer ${token.body.result.value}` };
    const own = await p.api("POST", telemetry(other), { queryId: "q", timeframe: lastHour(), view: "invocations", limit: 2000 }, theirs);
    assert.equal(own.status, 200);
    assert.deepEqual(own.body.result.invocations, {}, "the other account has no invocations of its own");
    const crossing = await p.api("POST", telemetry(p.accountId), { queryId: "q", timeframe: lastHour(), view: "invocations", limit: 10 }, theirs);
    assert.ok(crossing.status === 403 || crossing.status === 404, `another account's logs: ${crossing.status}`);
  },
);
