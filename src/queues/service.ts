import type { EdgeService, ServiceContext } from "../core/service.js";
import { queueBindingOperation, queuesMetrics } from "./metrics.js";
import { createQueueBindingHandler, type QueueBindingHandler } from "./binding.js";
import { readQueuesConfig, serveOptions } from "./config.js";
import { QueueDelivery, type QueueDeliverer } from "./delivery.js";
import { QUEUES_PG_MIGRATIONS } from "./pg-migrations.js";
import { PgQueuesStore, QUEUES_AREA } from "./pg-store.js";
import { Producer } from "./producer.js";
import { PullConsumers } from "./pull.js";
import { RetentionSweep } from "./retention.js";
import { QUEUES_MIGRATIONS } from "./sqlite-migrations.js";
import { SqliteQueuesStore } from "./sqlite-store.js";
import type { QueuesStore } from "./store.js";

/** What the workers area gives Queues once its runtime runs: scripts to check, and how to run a consumer. */
export interface QueuesWorkers {
  scriptExists(accountId: string, name: string): Promise<boolean>;
  deliverer: QueueDeliverer;
  /** The account's Workers `scripts` became or ceased to be consumers (see QueuesRouteDeps.consumersChanged). */
  consumersChanged(accountId: string, scripts: readonly string[]): Promise<void>;
  /** The account's Workers that bind each queue as a producer, by queue name. */
  producersOf(accountId: string): Promise<ReadonlyMap<string, readonly string[]>>;
}

// The types of the consumer port workers implements (QueuesWorkers.deliverer), handed over with this service's type.
export type { QueueDeliverer, QueueOutcome } from "./delivery.js";
export type { LeasedMessage, WorkerConsumer } from "./store.js";

export interface QueuesService extends EdgeService {
  /** Serves workerd's queue binding protocol; mounted by the workers service behind its loopback server. */
  readonly bindingHandler: QueueBindingHandler;
  /** Whether the account has a queue of that name (a producer binding must name one). */
  queueExists(accountId: string, name: string): Promise<boolean>;
  /** The name of the account's queue with that id (R2's event notifications name queues by id). */
  queueName(accountId: string, queueId: string): Promise<string | undefined>;
  /** Whether the account's Worker of that name consumes a queue (a consumer's script restarts when that changes). */
  isConsumer(accountId: string, scriptName: string): Promise<boolean>;
  /** Removes the consumers a deleted Worker was. */
  scriptDeleted(accountId: string, scriptName: string): Promise<void>;
  /**
   * Sends JSON bodies to the account's queue (R2's event notifications): "gone" when the account has no such queue.
   * Throws when they cannot be taken now (the backlog cap), for the caller to try again.
   */
  sendJson(accountId: string, queueId: string, bodies: readonly string[]): Promise<"sent" | "gone">;
  /** Calls `listener` after a queue is deleted through the API (R2 then drops the rules that send to it). */
  onQueueDeleted(listener: (accountId: string, queueId: string) => Promise<void>): void;
  /** Starts delivering to worker consumers (the workers service calls it once its scripts run); returns how to stop. */
  startDelivery(workers: QueuesWorkers): () => Promise<void>;
}

/** Expired messages one sweep transaction deletes at most: about 4 ms of SQLite work (bench/queues/sweep.mjs). */
const RETENTION_SWEEP_BATCH = 100;

/**
 * Queues: queues, consumers and messages in db/queues.sqlite, or in PostgreSQL's schema `queues` when the
 * platform runs on it (every node then delivers, each message from one node: see delivery.ts).
 */
export function createQueuesService(ctx: ServiceContext): QueuesService {
  const config = readQueuesConfig(ctx.options(serveOptions));
  const log = ctx.log.child({ service: "queues" });
  const pg = ctx.openPostgres(QUEUES_AREA, QUEUES_PG_MIGRATIONS);
  const store: QueuesStore = pg ? new PgQueuesStore(pg) : new SqliteQueuesStore(ctx.openDb("queues", QUEUES_MIGRATIONS));
  let delivery: QueueDelivery | undefined;
  let workers: QueuesWorkers | undefined;
  const wake = () => delivery?.wake();
  const producer = new Producer(store, wake, config.backlogMaxBytes);
  const pull = new PullConsumers(store, log, wake);
  const deletedListeners: ((accountId: string, queueId: string) => Promise<void>)[] = [];
  const metrics = ctx.metrics && queuesMetrics(ctx.metrics, store);
  const queueBinding = createQueueBindingHandler(store, producer, log);
  const sweep = new RetentionSweep(store, log, { intervalMs: config.sweepIntervalMs, batch: RETENTION_SWEEP_BATCH });
  return {
    name: "queues",
    bindingHandler: (target, req, res) => {
      metrics?.track(queueBindingOperation(req), "binding", req, res);
      queueBinding(target, req, res);
    },
    queueExists: async (accountId, name) => (await store.getQueueByName(accountId, name)) !== undefined,
    queueName: async (accountId, queueId) => (await store.getQueue(accountId, queueId))?.queue_name,
    isConsumer: async (accountId, scriptName) => (await store.consumersOfScript(accountId, scriptName)).length > 0,
    scriptDeleted: async (accountId, scriptName) => {
      await store.deleteConsumersOfScript(accountId, scriptName);
    },
    async sendJson(accountId, queueId, bodies) {
      const queue = await store.getQueue(accountId, queueId);
      if (!queue) return "gone";
      try {
        await producer.send(
          queue,
          bodies.map((b) => ({ body: Buffer.from(b), contentType: "json" })),
        );
      } catch (e) {
        // Deleted between the look-up and the send.
        if ((e as { status?: number }).status === 404) return "gone";
        throw e;
      }
      return "sent";
    },
    onQueueDeleted(listener) {
      deletedListeners.push(listener);
    },
    async registerApi(app) {
      const { registerQueuesRoutes } = await import("./routes.js");
      registerQueuesRoutes(app, {
        metrics,
        store,
        producer,
        pull,
        scriptExists: (accountId, name) => (workers ? workers.scriptExists(accountId, name) : Promise.resolve(false)),
        producersOf: (accountId) => (workers ? workers.producersOf(accountId) : Promise.resolve(new Map())),
        queueDeleted: async (accountId, queueId) => {
          for (const listener of deletedListeners) await listener(accountId, queueId);
        },
        consumersChanged: async (accountId, scripts) => {
          const names = [...new Set(scripts.filter((s): s is string => s !== undefined))];
          if (workers && names.length > 0) await workers.consumersChanged(accountId, names);
        },
      });
    },
    startDelivery(w) {
      workers = w;
      const started = new QueueDelivery(store, w.deliverer, log, config);
      delivery = started;
      started.start();
      return () => started.stop();
    },
    async start() {
      sweep.start();
    },
    async stop() {
      await sweep.stop();
      await delivery?.stop();
    },
  };
}
