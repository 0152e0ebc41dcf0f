import assert from "node:assert/strict";
import { test } from "node:test";
import { passes, tailFilters, tailFiltersBody, traceEventOf, type TraceEvent } from "./events.js";

const event = (over: Partial<TraceEvent> = {}): TraceEvent => ({
  outcome: "ok",
  scriptName: null,
  eventTimestamp: 1,
  logs: [{ level: "log", message: ["order", { id: 7 }], timestamp: 1 }],
  exceptions: [],
  event: { request: { method: "GET", url: "http://s.example/", headers: { "cf-connecting-ip": "203.0.113.9", "x-a": "b" } } },
  ...over,
});

test("client_ip matches the request's cf-connecting-ip, and self is whoever opened the session", () => {
  const filters = tailFilters(tailFiltersBody.parse({ filters: [{ client_ip: ["self"] }] }), "203.0.113.9");
  assert.deepEqual(filters, [{ client_ip: ["203.0.113.9"] }]);
  assert.equal(passes(event(), filters), true);
  assert.equal(passes(event(), [{ client_ip: ["198.51.100.1"] }]), false);
});

test("sampling_rate keeps the share of events it names; query searches logged values as printed", () => {
  assert.equal(
    passes(event(), [{ sampling_rate: 0.5 }], () => 0.49),
    true,
  );
  assert.equal(
    passes(event(), [{ sampling_rate: 0.5 }], () => 0.5),
    false,
  );
  assert.equal(passes(event(), [{ query: '{"id":7}' }]), true);
  assert.equal(passes(event({ event: { cron: "* * * * *", scheduledTime: 0 } }), [{ method: ["GET"] }]), false, "no request, no method");
});

test("the platform's own invocations are dropped; a cron tick is shown as a scheduled event", () => {
  assert.equal(traceEventOf({ ...event(), entrypoint: "__edge_handlers_ab12" }, "s"), undefined);
  const tick = traceEventOf(
    { ...event({ event: { request: { method: "POST", url: "http://workerd/?cron=*%2F5+*+*+*+*&time=1700000000000" } } }), entrypoint: "__edge_scheduled_ab12" },
    "s",
  );
  assert.deepEqual(tick?.event, { cron: "*/5 * * * *", scheduledTime: 1700000000000 });
  assert.equal(tick?.scriptName, "s");
  assert.equal(traceEventOf("not an event", "s"), undefined);
});
