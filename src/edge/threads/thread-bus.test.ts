import assert from "node:assert/strict";
import { test } from "node:test";
import type { Bus, BusEvent } from "../../core/cluster/bus.js";
import { ThreadBus } from "./thread-bus.js";

/** A promise settled from outside. */
function deferred(): { promise: Promise<void>; resolve: () => void; reject: (err: Error) => void } {
  let resolve!: () => void;
  let reject!: (err: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Every promise callback queued so far has run (and those they queued): a macrotask turn later. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

const change = (area: string, what = "zone:1"): BusEvent => ({ type: "change", area, what, origin: "node-a" });

test("applied(n) waits for every handler's work on notice n and on every notice before it, rejected work included", async () => {
  const applied: number[] = [];
  const bus = new ThreadBus("node-a/edge-thread-1", (n) => applied.push(n));
  const work = new Map<string, ReturnType<typeof deferred>>();
  const handler = (name: string) => (event: BusEvent) => {
    const d = deferred();
    work.set(`${name}:${event.type === "change" ? event.what : "resync"}`, d);
    return d.promise;
  };
  bus.subscribe("dns", handler("dns-a"));
  bus.subscribe("dns", handler("dns-b"));
  bus.subscribe("settings", handler("settings"));

  bus.deliver(1, change("dns", "1"));
  bus.deliver(2, change("settings", "2"));
  bus.deliver(3, change("dns", "3"));
  await settle();
  assert.deepEqual(applied, [], "nothing is applied while its work runs");

  // Later notices' work done first: still nothing, notice 1's work is not.
  work.get("settings:2")!.resolve();
  work.get("dns-a:3")!.resolve();
  work.get("dns-b:3")!.resolve();
  await settle();
  assert.deepEqual(applied, []);

  // One of notice 1's two handlers done: not yet.
  work.get("dns-a:1")!.resolve();
  await settle();
  assert.deepEqual(applied, []);

  // The other fails: notice 1 counts as applied (its handler logs its own failure), and with it 2 and 3, in order.
  work.get("dns-b:1")!.reject(new Error("reload failed"));
  await settle();
  assert.deepEqual(applied, [1, 2, 3]);
  await bus.barrier();
});

test("applied(n) comes in order, each once, only after that notice's own work settled", async () => {
  const applied: number[] = [];
  const bus = new ThreadBus("t", (n) => applied.push(n));
  const pending: ReturnType<typeof deferred>[] = [];
  bus.subscribe("rules", () => {
    const d = deferred();
    pending.push(d);
    return d.promise;
  });
  for (let n = 1; n <= 4; n++) bus.deliver(n, change("rules", `zone:${n}`));
  // Settled last to first: each settles only its own notice, and the order still holds.
  for (let i = pending.length - 1; i >= 1; i--) {
    pending[i].resolve();
    await settle();
    assert.deepEqual(applied, []);
  }
  pending[0].resolve();
  await settle();
  assert.deepEqual(applied, [1, 2, 3, 4]);
  // A notice no handler does work for (another area) is applied after the ones before it.
  const more = deferred();
  bus.subscribe("dns", () => more.promise);
  bus.deliver(5, change("dns"));
  bus.deliver(6, change("kv"));
  await settle();
  assert.deepEqual(applied, [1, 2, 3, 4]);
  more.resolve();
  await settle();
  assert.deepEqual(applied, [1, 2, 3, 4, 5, 6]);
});

test("a handler that throws, returns nothing or returns a value does not hold its notice up; one that never settles does", async () => {
  const applied: number[] = [];
  const bus = new ThreadBus("t", (n) => applied.push(n));
  bus.subscribe("dns", () => {
    throw new Error("handler bug");
  });
  bus.subscribe("dns", () => undefined);
  bus.subscribe("dns", () => 42);
  bus.deliver(1, change("dns"));
  await settle();
  assert.deepEqual(applied, [1]);
  await bus.barrier();

  bus.subscribe("settings", () => new Promise(() => undefined));
  bus.deliver(2, change("settings"));
  bus.deliver(3, change("dns"));
  await settle();
  assert.deepEqual(applied, [1], "notice 2's work never ends: neither it nor 3 is applied");
  let passed = false;
  void bus.barrier().then(() => (passed = true));
  await settle();
  assert.equal(passed, false, "the barrier waits for it too");
});

test("a resync reaches every area's handlers; a change only its own area's", async () => {
  const applied: number[] = [];
  const bus = new ThreadBus("t", (n) => applied.push(n));
  const heard: string[] = [];
  const areas = ["dns", "settings", "rules", "routes", "cache"];
  for (const area of areas) bus.subscribe(area, (event) => void heard.push(`${area}:${event.type}`));
  bus.subscribe("dns", (event) => void heard.push(`dns-2:${event.type}`));

  bus.deliver(1, change("settings"));
  assert.deepEqual(heard, ["settings:change"]);
  heard.length = 0;
  bus.deliver(2, change("dns"));
  assert.deepEqual(heard.sort(), ["dns-2:change", "dns:change"]);
  heard.length = 0;
  bus.deliver(3, change("purges-nobody-follows"));
  assert.deepEqual(heard, []);
  bus.deliver(4, { type: "resync" });
  assert.deepEqual(heard.sort(), ["cache:resync", "dns-2:resync", "dns:resync", "routes:resync", "rules:resync", "settings:resync"]);
  await settle();
  assert.deepEqual(applied, [1, 2, 3, 4]);
});

test("an unsubscribed handler hears nothing more", async () => {
  const bus = new ThreadBus("t", () => undefined);
  const heard: string[] = [];
  const off = bus.subscribe("dns", () => void heard.push("dns"));
  bus.deliver(1, change("dns"));
  off();
  bus.deliver(2, change("dns"));
  bus.deliver(3, { type: "resync" });
  assert.deepEqual(heard, ["dns"]);
});

test("the thread announces nothing: publish rejects", async () => {
  const bus: Bus = new ThreadBus("node-a/edge-thread-2", () => undefined);
  assert.equal(bus.nodeId, "node-a/edge-thread-2");
  await assert.rejects(bus.publish("dns", "zone:1"), /changes nothing/);
  await assert.rejects(bus.publish("cache", "purge:x"));
});

test("current(): a notice counts from the moment the main thread relays it, until its work here is done", async () => {
  const relayed = new Int32Array(new SharedArrayBuffer(4));
  Atomics.store(relayed, 0, 4);
  // Started after notice 4 was relayed: what it read includes it.
  const bus = new ThreadBus("node-a/edge-thread-1", () => undefined, 4);
  assert.equal(bus.current(relayed), true);
  const d = deferred();
  bus.subscribe("dns", () => d.promise);
  // Relayed, its message not taken up by this thread yet: not current.
  Atomics.store(relayed, 0, 5);
  assert.equal(bus.current(relayed), false);
  bus.deliver(5, change("dns"));
  await settle();
  assert.equal(bus.current(relayed), false, "not while its work runs");
  d.resolve();
  await settle();
  assert.equal(bus.current(relayed), true);
  assert.equal(bus.appliedUpTo, 5);
});
