import type { IncomingMessage } from "node:http";
import { Gauge, type Registry } from "prom-client";
import { OperationMetrics } from "../core/metrics/operations.js";
import { METRIC_PREFIX } from "../core/metrics/registry.js";
import type { QueuesStore } from "./store.js";

/**
 * The queue binding's calls (queues/binding.ts): send(), sendBatch() and the backlog metrics a producer reads; and the
 * v4 API's on messages (queues/routes.ts): the same three, plus `pull`, `ack` (HTTP pull consumers) and `purge`.
 */
const QUEUE_OPERATIONS = new Set(["send", "send_batch", "metrics", "pull", "ack", "purge"]);

export function queueBindingOperation(req: IncomingMessage): string {
  const route = `${req.method} ${(req.url ?? "/").split("?")[0]}`;
  return route === "POST /message" ? "send" : route === "POST /batch" ? "send_batch" : route === "GET /metrics" ? "metrics" : "other";
}

/**
 * Queues' metrics: binding operations (edgeplatform_queues_operations_total, _bytes_total) and the backlog of all
 * queues added up, read from the store when scraped (one aggregate query; no per-queue label, so any number of
 * tenants' queues is a fixed number of series; a tenant's own queue is seen through the API's backlog).
 */
export function queuesMetrics(registry: Registry, store: QueuesStore): OperationMetrics {
  // A store that cannot answer now (PostgreSQL away) keeps the last numbers: a scrape never fails for it.
  let last = { queues: 0, messages: 0, bytes: 0 };
  const totals = () =>
    store.backlogTotals().then(
      (t) => (last = t),
      () => last,
    );
  let pending: ReturnType<typeof totals> | undefined;
  // The three gauges are read in one scrape: one query serves them.
  const read = () => (pending ??= totals().finally(() => setImmediate(() => (pending = undefined))));
  new Gauge({
    name: `${METRIC_PREFIX}queues_backlog_messages`,
    help: "Messages waiting in all queues (sent, not yet acknowledged), read from the store when scraped",
    registers: [registry],
    async collect() {
      this.set((await read()).messages);
    },
  });
  new Gauge({
    name: `${METRIC_PREFIX}queues_backlog_bytes`,
    help: "Bytes of the messages waiting in all queues, read from the store when scraped",
    registers: [registry],
    async collect() {
      this.set((await read()).bytes);
    },
  });
  new Gauge({
    name: `${METRIC_PREFIX}queues`,
    help: "Queues there are (all accounts)",
    registers: [registry],
    async collect() {
      this.set((await read()).queues);
    },
  });
  return new OperationMetrics(registry, "queues", QUEUE_OPERATIONS);
}
