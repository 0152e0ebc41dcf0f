import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { CoreErrors } from "../core/errors.js";
import { ok } from "../core/http/envelope.js";
import { parseUserJson } from "../core/http/json-input.js";
import { readPage, resultInfo } from "../core/http/pagination.js";
import { parseWith } from "../core/http/validate.js";
import { apiOperation } from "../core/metrics/api-operations.js";
import type { OperationMetrics } from "../core/metrics/operations.js";
import { QueuesCodes, QueuesErrors } from "./errors.js";
import { CONSUMER_DEFAULTS, QUEUE_DEFAULTS, QUEUES_LIMITS } from "./limits.js";
import { delayOf, type Producer } from "./producer.js";
import type { PullConsumers } from "./pull.js";
import type { ConsumerInput, ConsumerRecord, NewMessage, QueueRecord, QueuesStore } from "./store.js";
import { checkQueueName } from "./validation.js";

type Params = { account_id: string; queue_id: string; consumer_id: string };

/** The v4 path, and the older `/workers/queues` one some wrangler 3 releases call: the same routes answer both. */
const BASES = ["/accounts/:account_id/queues", "/accounts/:account_id/workers/queues"];
const read = { config: { permission: "queues_read" } } as const;
const edit = { config: { permission: "queues_edit" } } as const;
/** A batch of the largest messages as JSON (text escapes can double a body), with room around it. */
const MESSAGES_BODY_LIMIT = QUEUES_LIMITS.batchBytes * 6 + 64 * 1024;

const intIn = (min: number, max: number) => z.number().int().min(min).max(max);

/** Whole seconds in a range, every refusal saying the range. */
const secondsIn = (field: string, min: number, max: number) => {
  const says = `${field} must be a whole number of seconds from ${min} to ${max}`;
  return z.number(says).int(says).min(min, says).max(max, says);
};
/** A queue's settings as the hosted API takes them on create and update (seconds); left out, the value stays or is the default. */
const queueSettings = z
  .object({
    delivery_delay: secondsIn("delivery_delay", 0, QUEUES_LIMITS.delaySeconds),
    delivery_paused: z.boolean("delivery_paused must be true or false"),
    message_retention_period: secondsIn("message_retention_period", QUEUES_LIMITS.retentionMinSeconds, QUEUES_LIMITS.retentionMaxSeconds),
  })
  .partial()
  .strict();
const createBody = z.object({ queue_name: z.string(), settings: queueSettings.nullish() });
const updateBody = z.object({ queue_name: z.string().optional(), settings: queueSettings.nullish() }).strict();

const consumerBody = z
  .object({
    type: z.enum(["worker", "http_pull"]).default("worker"),
    script_name: z.string().min(1).optional(),
    /** wrangler 3 sends the script as `script_name`; the hosted API also takes `script`. */
    script: z.string().min(1).optional(),
    environment_name: z.string().optional(),
    dead_letter_queue: z.string().nullish(),
    settings: z
      .object({
        batch_size: intIn(1, QUEUES_LIMITS.batchMessages).nullish(),
        max_retries: intIn(0, QUEUES_LIMITS.maxRetries).nullish(),
        max_wait_time_ms: intIn(0, QUEUES_LIMITS.batchTimeoutSeconds * 1000).nullish(),
        retry_delay: intIn(0, QUEUES_LIMITS.delaySeconds).nullish(),
        visibility_timeout_ms: intIn(1, QUEUES_LIMITS.visibilityTimeoutMs).nullish(),
        /** One batch at a time per node is what this platform runs; a limit it cannot keep is refused. */
        max_concurrency: z.null().optional(),
      })
      .strict()
      .default({}),
  })
  .strict();

/** The hosted purge body: the caller confirms that the messages go for good. */
const purgeBody = z.object({ delete_messages_permanently: z.boolean().optional() });

const messageBody = z.object({
  body: z.unknown(),
  content_type: z.enum(["json", "text"]).default("json"),
  delay_seconds: z.unknown().optional(),
});
const batchBody = z.object({ messages: z.array(messageBody).max(QUEUES_LIMITS.batchMessages), delay_seconds: z.unknown().optional() });

export interface QueuesRouteDeps {
  store: QueuesStore;
  producer: Producer;
  pull: PullConsumers;
  /** Whether the account has a Worker of that name (a worker consumer must name one). */
  scriptExists(accountId: string, name: string): Promise<boolean>;
  /**
   * The account's Workers `scripts` became or ceased to be consumers: each runs again with or without the queue
   * dispatcher (workers/runtime/queue-dispatch.ts). Resolves once they do.
   */
  consumersChanged(accountId: string, scripts: readonly (string | undefined)[]): Promise<void>;
  /** The account's Workers that bind each queue as a producer, by queue name. */
  producersOf(accountId: string): Promise<ReadonlyMap<string, readonly string[]>>;
  /** The queue is gone: what refers to it elsewhere (R2 event notification rules) goes too. */
  queueDeleted?(accountId: string, queueId: string): Promise<void>;
  /** Where the routes on messages (send, pull, ack, purge, metrics) are counted as queue operations (`via="api"`). */
  metrics?: OperationMetrics;
}

/**
 * A request's JSON body. wrangler 3 sends its Queues bodies without a content type (fetch makes a string body
 * text/plain), and the hosted API reads them as JSON: so does this.
 */
function jsonBody(body: unknown): unknown {
  if (typeof body !== "string") return body ?? {};
  if (body.trim() === "") return {};
  try {
    return parseUserJson(body);
  } catch (e) {
    throw CoreErrors.malformedJson((e as Error).message);
  }
}

/** How many names one list request may filter by (wrangler asks for the queues of a config at once). */
const MAX_NAMES = 100;

/** The `name` filter of a list: given once, or repeated (wrangler's check that a config's queues exist). */
function namesOf(name: unknown): string[] | undefined {
  if (name === undefined || name === "") return undefined;
  const names = Array.isArray(name) ? name : [name];
  if (names.length > MAX_NAMES || !names.every((n): n is string => typeof n === "string")) {
    throw QueuesErrors.body(`name may be given at most ${MAX_NAMES} times`);
  }
  return names;
}

/** A consumer as the hosted API shows it: a worker consumer's script also as `script`, which wrangler 3 matches on. */
const consumerView = (c: ConsumerRecord) => (c.type === "worker" ? { ...c, script: c.script_name } : c);

/** A message sent through the API: its body as JSON or text, as the hosted API takes it. */
function apiMessage(m: z.infer<typeof messageBody>, fallbackDelay: number | undefined): NewMessage {
  if (m.body === undefined) throw QueuesErrors.body("body is required");
  if (m.content_type === "text" && typeof m.body !== "string") throw QueuesErrors.body('a "text" message\'s body must be a string');
  const body = Buffer.from(m.content_type === "text" ? (m.body as string) : JSON.stringify(m.body));
  return { body, contentType: m.content_type, delaySeconds: delayOf(m.delay_seconds) ?? fallbackDelay };
}

/**
 * The v4 Queues routes. The guard has checked the caller's permission on `account_id`; every queue is looked up in
 * that account only, so another account's queue id answers 404 as an unknown one does.
 */
export function registerQueuesRoutes(app: FastifyInstance, deps: QueuesRouteDeps): void {
  for (const base of BASES) registerUnder(app, base, deps);
}

function registerUnder(app: FastifyInstance, base: string, deps: QueuesRouteDeps): void {
  const { store } = deps;

  const queueOf = async (p: Params): Promise<QueueRecord> => {
    const q = await store.getQueue(p.account_id, p.queue_id);
    if (!q) throw QueuesErrors.queueNotFound();
    return q;
  };
  /** A queue as the hosted API shows it, with its consumers and producers (`producers` read once per request). */
  const view = async (accountId: string, q: QueueRecord, producers?: ReadonlyMap<string, readonly string[]>) => {
    const consumers = await store.listConsumers(accountId, q.queue_id).catch(() => [] as ConsumerRecord[]);
    const scripts = (producers ?? (await deps.producersOf(accountId))).get(q.queue_name) ?? [];
    return {
      ...q,
      consumers: consumers.map(consumerView),
      consumers_total_count: consumers.length,
      producers: scripts.map((script) => ({ type: "worker", script })),
      producers_total_count: scripts.length,
    };
  };

  app.get(base, read, async (req) => {
    const { account_id } = req.params as Params;
    const q = req.query as Record<string, string | undefined>;
    const page = readPage(q, { defaultPerPage: 100, maxPerPage: 1000, code: QueuesCodes.badRequest });
    const { queues, total } = await store.listQueues(account_id, { names: namesOf(q.name), offset: page.offset, limit: page.perPage });
    const producers = await deps.producersOf(account_id);
    return ok(await Promise.all(queues.map((x) => view(account_id, x, producers))), resultInfo(page, queues.length, total));
  });

  app.post(base, edit, async (req) => {
    const { account_id } = req.params as Params;
    const { queue_name, settings } = parseWith(createBody, jsonBody(req.body), QueuesCodes.badRequest);
    return ok(await view(account_id, await store.createQueue(account_id, queue_name, settings ?? {})));
  });

  app.get(`${base}/:queue_id`, read, async (req) => {
    const p = req.params as Params;
    return ok(await view(p.account_id, await queueOf(p)));
  });

  /**
   * PUT replaces the settings (those left out become the defaults, as the hosted "no partial updates" says); PATCH
   * changes only those given (wrangler's pause-delivery sends delivery_paused alone). Either keeps the name when
   * queue_name is left out.
   */
  const update = (replace: boolean) => async (req: { params: unknown; body: unknown }) => {
    const p = req.params as Params;
    const { queue_name, settings } = parseWith(updateBody, jsonBody(req.body), QueuesCodes.badRequest);
    const change = { name: queue_name, settings: replace ? { ...QUEUE_DEFAULTS, ...settings } : (settings ?? {}) };
    return ok(await view(p.account_id, await store.updateQueue(p.account_id, p.queue_id, change)));
  };
  app.put(`${base}/:queue_id`, edit, update(true));
  app.patch(`${base}/:queue_id`, edit, update(false));

  app.delete(`${base}/:queue_id`, edit, async (req) => {
    const p = req.params as Params;
    const consumers = await store.listConsumers(p.account_id, p.queue_id);
    await store.deleteQueue(p.account_id, p.queue_id);
    await deps.queueDeleted?.(p.account_id, p.queue_id);
    await deps.consumersChanged(
      p.account_id,
      consumers.map((c) => c.script_name),
    );
    return ok(null);
  });

  app.post(`${base}/:queue_id/purge`, { ...edit, ...apiOperation(deps.metrics, "purge") }, async (req) => {
    const p = req.params as Params;
    const { delete_messages_permanently } = parseWith(purgeBody, jsonBody(req.body), QueuesCodes.badRequest);
    if (delete_messages_permanently !== true) throw QueuesErrors.purgeUnconfirmed();
    const queue = await queueOf(p);
    await store.purge(p.account_id, queue.queue_id, Date.now());
    return ok(await view(p.account_id, queue));
  });

  // The hosted purge runs in the background and is polled here; ours has finished when the POST answers, so the last
  // purge is always complete. A queue never purged answers an empty result.
  app.get(`${base}/:queue_id/purge`, read, async (req) => {
    const p = req.params as Params;
    const queue = await queueOf(p);
    const startedAt = await store.lastPurge(p.account_id, queue.queue_id);
    return ok(startedAt === null ? {} : { completed: "true", started_at: new Date(startedAt).toISOString() });
  });

  // ---- consumers ----

  const consumerInput = async (p: Params, queue: QueueRecord, body: unknown): Promise<ConsumerInput> => {
    const b = parseWith(consumerBody, body ?? {}, QueuesCodes.badRequest);
    const s = b.settings;
    const settings = {
      batch_size: s.batch_size ?? CONSUMER_DEFAULTS.batchSize,
      max_retries: s.max_retries ?? CONSUMER_DEFAULTS.maxRetries,
      max_wait_time_ms: s.max_wait_time_ms ?? CONSUMER_DEFAULTS.maxWaitTimeMs,
      retry_delay: s.retry_delay ?? CONSUMER_DEFAULTS.retryDelaySeconds,
      ...(b.type === "http_pull" ? { visibility_timeout_ms: s.visibility_timeout_ms ?? 30_000 } : {}),
    };
    if (b.dead_letter_queue) {
      checkQueueName(b.dead_letter_queue);
      if (b.dead_letter_queue === queue.queue_name) throw QueuesErrors.deadLetterItself();
    }
    const dead = b.dead_letter_queue ? { dead_letter_queue: b.dead_letter_queue } : {};
    if (b.type === "http_pull") return { type: "http_pull", settings, ...dead };
    const script = b.script_name ?? b.script;
    if (!script) throw QueuesErrors.body("a worker consumer needs script_name");
    if (!(await deps.scriptExists(p.account_id, script))) throw QueuesErrors.scriptNotFound(script);
    return { type: "worker", script_name: script, settings, ...dead };
  };

  app.get(`${base}/:queue_id/consumers`, read, async (req) => {
    const p = req.params as Params;
    return ok((await store.listConsumers(p.account_id, p.queue_id)).map(consumerView));
  });

  app.post(`${base}/:queue_id/consumers`, edit, async (req) => {
    const p = req.params as Params;
    const queue = await queueOf(p);
    const added = await store.addConsumer(p.account_id, queue.queue_id, await consumerInput(p, queue, jsonBody(req.body)));
    await deps.consumersChanged(p.account_id, [added.script_name]);
    return ok(consumerView(added));
  });

  app.put(`${base}/:queue_id/consumers/:consumer_id`, edit, async (req) => {
    const p = req.params as Params;
    const queue = await queueOf(p);
    const before = (await store.listConsumers(p.account_id, queue.queue_id)).find((x) => x.consumer_id === p.consumer_id);
    const updated = await store.updateConsumer(p.account_id, queue.queue_id, p.consumer_id, await consumerInput(p, queue, jsonBody(req.body)));
    await deps.consumersChanged(p.account_id, [before?.script_name, updated.script_name]);
    return ok(consumerView(updated));
  });

  app.get(`${base}/:queue_id/consumers/:consumer_id`, read, async (req) => {
    const p = req.params as Params;
    const c = (await store.listConsumers(p.account_id, p.queue_id)).find((x) => x.consumer_id === p.consumer_id);
    if (!c) throw QueuesErrors.consumerNotFound();
    return ok(consumerView(c));
  });

  app.get(`${base}/:queue_id/metrics`, { ...read, ...apiOperation(deps.metrics, "metrics") }, async (req) => {
    const p = req.params as Params;
    const stats = await store.stats((await queueOf(p)).queue_id, Date.now());
    return ok({ backlog_count: stats.backlog, backlog_bytes: stats.backlogBytes, oldest_message_timestamp_ms: stats.oldestSentAtMs ?? 0 });
  });

  app.delete(`${base}/:queue_id/consumers/:consumer_id`, edit, async (req) => {
    const p = req.params as Params;
    const gone = (await store.listConsumers(p.account_id, p.queue_id)).find((x) => x.consumer_id === p.consumer_id);
    await store.deleteConsumer(p.account_id, p.queue_id, p.consumer_id);
    await deps.consumersChanged(p.account_id, [gone?.script_name]);
    return ok(null);
  });

  // ---- messages ----

  const messagesRoute = { ...edit, bodyLimit: MESSAGES_BODY_LIMIT };

  app.post(`${base}/:queue_id/messages`, { ...messagesRoute, ...apiOperation(deps.metrics, "send") }, async (req) => {
    const p = req.params as Params;
    const queue = await queueOf(p);
    await deps.producer.send(queue, [apiMessage(parseWith(messageBody, jsonBody(req.body), QueuesCodes.badRequest), undefined)]);
    return ok(null);
  });

  app.post(`${base}/:queue_id/messages/batch`, { ...messagesRoute, ...apiOperation(deps.metrics, "send_batch") }, async (req) => {
    const p = req.params as Params;
    const queue = await queueOf(p);
    const b = parseWith(batchBody, jsonBody(req.body), QueuesCodes.badRequest);
    const delay = delayOf(b.delay_seconds);
    await deps.producer.send(
      queue,
      b.messages.map((m) => apiMessage(m, delay)),
    );
    return ok(null);
  });

  app.post(`${base}/:queue_id/messages/pull`, { ...edit, ...apiOperation(deps.metrics, "pull") }, async (req) => {
    const p = req.params as Params;
    return ok(await deps.pull.pull(p.account_id, await queueOf(p), jsonBody(req.body)));
  });

  app.post(`${base}/:queue_id/messages/ack`, { ...edit, ...apiOperation(deps.metrics, "ack") }, async (req) => {
    const p = req.params as Params;
    return ok(await deps.pull.ack(p.account_id, await queueOf(p), jsonBody(req.body)));
  });
}
