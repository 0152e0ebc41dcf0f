import type { CliContext } from "../../core/cli/context.js";
import { UserError } from "../../core/errors.js";
import type { ConsumerRecord, QueueRecord } from "../store.js";

export const queuesPath = (account: string) => `/accounts/${encodeURIComponent(account)}/queues`;

/** The account's queue of that name, by the API; a clear error when there is none. */
export async function queueNamed(ctx: CliContext, account: string, name: string): Promise<QueueRecord & { consumers: ConsumerRecord[] }> {
  const found = await ctx.api().fetchResult<(QueueRecord & { consumers: ConsumerRecord[] })[]>("GET", queuesPath(account), { query: { name } });
  const queue = found.find((q) => q.queue_name === name);
  if (!queue) throw new UserError(`Queue "${name}" does not exist in this account: create it with \`edgecli queues create ${name}\``);
  return queue;
}

/** A consumer as the v4 API takes it (wrangler's body). */
export interface ConsumerBody {
  type: "worker" | "http_pull";
  script_name?: string;
  dead_letter_queue?: string;
  settings: { batch_size?: number; max_retries?: number; max_wait_time_ms?: number; retry_delay?: number; visibility_timeout_ms?: number };
}

/**
 * Makes `body` the consumer of `queueName`, as wrangler deploy does: the consumer of the same script (or the pull
 * consumer) is updated in place, any other consumer is left alone and the API refuses the second one.
 */
export async function putConsumer(ctx: CliContext, account: string, queueName: string, body: ConsumerBody): Promise<ConsumerRecord> {
  const queue = await queueNamed(ctx, account, queueName);
  const base = `${queuesPath(account)}/${queue.queue_id}/consumers`;
  const same = queue.consumers.find((c) => c.type === body.type && (body.type === "http_pull" || c.script_name === body.script_name));
  if (same) return ctx.api().fetchResult<ConsumerRecord>("PUT", `${base}/${same.consumer_id}`, { json: body });
  return ctx.api().fetchResult<ConsumerRecord>("POST", base, { json: body });
}

/** Removes the consumer `script` (or the pull consumer when `script` is undefined) from `queueName`. */
export async function removeConsumer(ctx: CliContext, account: string, queueName: string, script: string | undefined): Promise<void> {
  const queue = await queueNamed(ctx, account, queueName);
  const c = queue.consumers.find((x) => (script === undefined ? x.type === "http_pull" : x.script_name === script));
  if (!c) throw new UserError(script ? `The Worker "${script}" does not consume queue "${queueName}"` : `Queue "${queueName}" has no HTTP pull consumer`);
  await ctx.api().fetchResult("DELETE", `${queuesPath(account)}/${queue.queue_id}/consumers/${c.consumer_id}`);
}
