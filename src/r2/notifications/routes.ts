import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Readable } from "node:stream";
import { z } from "zod";
import { ok } from "../../core/http/envelope.js";
import { parseWith } from "../../core/http/validate.js";
import { R2Codes, R2Errors } from "../errors.js";
import type { BucketRef, R2Store } from "../store.js";
import type { NotificationQueues } from "./relay.js";
import { MAX_RULES_PER_BUCKET, newRules, rulesByQueue } from "./rules.js";
import { NOTIFICATION_ACTIONS, type NotificationRule } from "./store.js";

type Route = { Params: { account_id: string; bucket: string; queue_id?: string } };

const putBody = z.object({
  rules: z
    .array(
      z.object({
        actions: z.array(z.enum(NOTIFICATION_ACTIONS)).min(1),
        prefix: z.string().optional(),
        suffix: z.string().optional(),
        description: z.string().optional(),
      }),
    )
    .min(1)
    .max(MAX_RULES_PER_BUCKET),
});
const deleteBody = z.object({ ruleIds: z.array(z.string().max(64)).max(MAX_RULES_PER_BUCKET).optional() });

/** A rule as the hosted API lists it. */
const ruleJson = (r: NotificationRule) => ({
  ruleId: r.ruleId,
  createdAt: r.createdAt,
  prefix: r.prefix,
  suffix: r.suffix,
  actions: r.actions,
  description: r.description,
});

/**
 * The hosted event notification API (/event_notifications/r2/{bucket}/configuration): rules per queue of the
 * bucket's account. Registered inside the R2 routes' scope, which reads request bodies itself (`readJson`).
 */
export function registerNotificationRoutes(
  app: FastifyInstance,
  store: R2Store,
  queues: () => NotificationQueues | undefined,
  readJson: (raw: Readable) => Promise<unknown>,
): void {
  const base = "/accounts/:account_id/event_notifications/r2/:bucket/configuration";
  const read = { config: { permission: "r2_read" } } as const;
  const edit = { config: { permission: "r2_edit" } } as const;

  const bucketOf = async (req: FastifyRequest<Route>): Promise<BucketRef> => {
    if (!(await store.getBucket(req.params.account_id, req.params.bucket))) throw R2Errors.notificationBucketNotFound();
    return { accountId: req.params.account_id, bucketName: req.params.bucket };
  };
  /** The queue named by the path: a queue of the same account, or 404. */
  const queueOf = async (req: FastifyRequest<Route>): Promise<{ queueId: string; queueName: string }> => {
    const queueId = req.params.queue_id!;
    const name = await queues()?.queueName(req.params.account_id, queueId);
    if (name === undefined) throw R2Errors.notificationQueueNotFound();
    return { queueId, queueName: name };
  };
  /** The queue's name, or "" for a queue deleted while its rules were being removed. */
  const nameOf = async (accountId: string, queueId: string) => (await queues()?.queueName(accountId, queueId)) ?? "";

  app.get<Route>(base, read, async (req) => {
    const bucket = await bucketOf(req);
    const byQueue = rulesByQueue(await store.notificationRules(bucket));
    const list = [];
    for (const [queueId, rules] of byQueue) list.push({ queueId, queueName: await nameOf(bucket.accountId, queueId), rules: rules.map(ruleJson) });
    return ok({ bucketName: bucket.bucketName, queues: list });
  });

  app.get<Route>(`${base}/queues/:queue_id`, read, async (req) => {
    const bucket = await bucketOf(req);
    const queue = await queueOf(req);
    const rules = (await store.notificationRules(bucket)).filter((r) => r.queueId === queue.queueId);
    return ok({ ...queue, rules: rules.map(ruleJson) });
  });

  app.put<Route>(`${base}/queues/:queue_id`, edit, async (req) => {
    const bucket = await bucketOf(req);
    const queue = await queueOf(req);
    const body = parseWith(putBody, await readJson(req.raw), R2Codes.invalidNotificationConfig);
    await store.addNotificationRules(bucket, newRules(queue.queueId, body.rules));
    return ok({});
  });

  app.delete<Route>(`${base}/queues/:queue_id`, edit, async (req) => {
    const bucket = await bucketOf(req);
    const queue = await queueOf(req);
    // No body (or none of ruleIds): every rule of the queue goes, as the hosted API does.
    const body = parseWith(deleteBody, await readJson(req.raw), R2Codes.invalidNotificationConfig);
    if (body.ruleIds) {
      // An unknown id is refused before anything is removed (a typo must not look like success).
      const ids = new Set((await store.notificationRules(bucket)).filter((r) => r.queueId === queue.queueId).map((r) => r.ruleId));
      const unknown = body.ruleIds.find((id) => !ids.has(id));
      if (unknown !== undefined) throw R2Errors.notificationRuleNotFound(unknown);
    }
    await store.deleteNotificationRules(bucket, queue.queueId, body.ruleIds);
    return ok({});
  });
}
