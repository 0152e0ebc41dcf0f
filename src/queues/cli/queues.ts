import type { CliContext } from "../../core/cli/context.js";
import { UserError } from "../../core/errors.js";
import { printTable } from "../../core/cli/table.js";
import type { ConsumerRecord, QueueRecord } from "../store.js";
import { putConsumer, queueNamed, queuesPath, removeConsumer, type ConsumerBody } from "./consumers.js";

type QueueView = QueueRecord & { consumers: ConsumerRecord[]; consumers_total_count: number };

interface SettingArgs {
  "delivery-delay-secs"?: number;
  "message-retention-period-secs"?: number;
}

/** The settings given on the command line, as the API names them (the API checks their ranges). */
const settingsOf = (args: SettingArgs) => ({
  ...(args["delivery-delay-secs"] !== undefined && { delivery_delay: args["delivery-delay-secs"] }),
  ...(args["message-retention-period-secs"] !== undefined && { message_retention_period: args["message-retention-period-secs"] }),
});

export async function createQueue(args: { name?: string } & SettingArgs, ctx: CliContext): Promise<void> {
  const account = await ctx.accountId();
  const q = await ctx.api().fetchResult<QueueView>("POST", queuesPath(account), { json: { queue_name: args.name, settings: settingsOf(args) } });
  ctx.log.info(`✅ Created queue ${q.queue_name} (${q.queue_id})`);
  ctx.log.info(`Add it to your configuration file:\n[[queues.producers]]\nbinding = "QUEUE"\nqueue = "${q.queue_name}"`);
}

/** PATCH: only the settings given change. */
async function patchQueue(ctx: CliContext, name: string, settings: Partial<QueueRecord["settings"]>): Promise<QueueRecord> {
  const account = await ctx.accountId();
  const q = await queueNamed(ctx, account, name);
  return ctx.api().fetchResult<QueueRecord>("PATCH", `${queuesPath(account)}/${q.queue_id}`, { json: { settings } });
}

const describeSettings = (s: QueueRecord["settings"]) =>
  `delivery delay ${s.delivery_delay} s, retention ${s.message_retention_period} s, delivery ${s.delivery_paused ? "paused" : "running"}`;

export async function updateQueue(args: { name?: string } & SettingArgs, ctx: CliContext): Promise<void> {
  const settings = settingsOf(args);
  if (Object.keys(settings).length === 0) throw new UserError("Nothing to update: give --delivery-delay-secs and/or --message-retention-period-secs");
  const q = await patchQueue(ctx, args.name!, settings);
  ctx.log.info(`✅ Updated queue ${q.queue_name}: ${describeSettings(q.settings)}`);
}

export async function pauseDelivery(args: { name?: string }, ctx: CliContext): Promise<void> {
  const q = await patchQueue(ctx, args.name!, { delivery_paused: true });
  ctx.log.info(`✅ Paused message delivery for queue ${q.queue_name}`);
}

export async function resumeDelivery(args: { name?: string }, ctx: CliContext): Promise<void> {
  const q = await patchQueue(ctx, args.name!, { delivery_paused: false });
  ctx.log.info(`✅ Resumed message delivery for queue ${q.queue_name}`);
}

export async function listQueues(args: { json?: boolean }, ctx: CliContext): Promise<void> {
  const account = await ctx.accountId();
  const all = await ctx.api().fetchAllPages<QueueView>(queuesPath(account), {}, 1000);
  if (args.json) return ctx.json(all);
  if (all.length === 0) return ctx.log.info("No queues.");
  printTable(
    ctx,
    all.map((q) => ({ id: q.queue_id, name: q.queue_name, created_on: q.created_on, modified_on: q.modified_on, consumers: q.consumers_total_count })),
  );
}

export async function queueInfo(args: { name?: string; json?: boolean }, ctx: CliContext): Promise<void> {
  const account = await ctx.accountId();
  const q = await queueNamed(ctx, account, args.name!);
  if (args.json) return ctx.json(q);
  ctx.write(`Queue Name: ${q.queue_name}\nQueue ID: ${q.queue_id}\nCreated On: ${q.created_on}\nLast Modified: ${q.modified_on}\n`);
  ctx.write(`Settings: ${describeSettings(q.settings)}\n`);
  ctx.write(`Number of Consumers: ${q.consumers.length}\n`);
  for (const c of q.consumers) {
    const s = c.settings;
    const who = c.type === "worker" ? `worker ${c.script_name}` : "HTTP pull";
    ctx.write(
      `Consumer: ${who} (batch size ${s.batch_size}, batch timeout ${s.max_wait_time_ms} ms, retries ${s.max_retries}, retry delay ${s.retry_delay} s${c.dead_letter_queue ? `, dead letter queue ${c.dead_letter_queue}` : ""})\n`,
    );
  }
}

export async function deleteQueue(args: { name?: string; "skip-confirmation"?: boolean }, ctx: CliContext): Promise<number> {
  const account = await ctx.accountId();
  const q = await queueNamed(ctx, account, args.name!);
  const question = `About to delete queue '${q.queue_name}' and every message in it. Ok to proceed?`;
  if (!(await ctx.confirmDestructive(question, { given: args["skip-confirmation"], flag: "--skip-confirmation (-y)" }))) {
    ctx.log.info("Not deleting.");
    return 0;
  }
  await ctx.api().fetchResult("DELETE", `${queuesPath(account)}/${q.queue_id}`);
  ctx.log.info(`✅ Deleted queue ${q.queue_name}`);
  return 0;
}

/** Deletes every message of a queue, as the hosted `wrangler queues purge` does: asks first, unless --force. */
export async function purgeQueue(args: { name?: string; force?: boolean }, ctx: CliContext): Promise<number> {
  const account = await ctx.accountId();
  const q = await queueNamed(ctx, account, args.name!);
  const question = `About to delete every message in queue '${q.queue_name}', permanently. Ok to proceed?`;
  if (!(await ctx.confirmDestructive(question, { given: args.force, flag: "--force" }))) {
    ctx.log.info("Not purging.");
    return 0;
  }
  await ctx.api().fetchResult("POST", `${queuesPath(account)}/${q.queue_id}/purge`, { json: { delete_messages_permanently: true } });
  ctx.log.info(`✅ Purged queue '${q.queue_name}'`);
  return 0;
}

interface ConsumerArgs {
  queue?: string;
  script?: string;
  "batch-size"?: number;
  "batch-timeout"?: number;
  "message-retries"?: number;
  "dead-letter-queue"?: string;
  "retry-delay-secs"?: number;
}

const whole = (name: string, v: number | undefined) => {
  if (v !== undefined && (!Number.isInteger(v) || v < 0)) throw new UserError(`--${name} must be a whole number`);
  return v;
};

export async function addConsumer(args: ConsumerArgs, ctx: CliContext): Promise<void> {
  const account = await ctx.accountId();
  const timeout = whole("batch-timeout", args["batch-timeout"]);
  const body: ConsumerBody = {
    type: "worker",
    script_name: args.script,
    ...(args["dead-letter-queue"] ? { dead_letter_queue: args["dead-letter-queue"] } : {}),
    settings: {
      batch_size: whole("batch-size", args["batch-size"]),
      max_retries: whole("message-retries", args["message-retries"]),
      max_wait_time_ms: timeout === undefined ? undefined : timeout * 1000,
      retry_delay: whole("retry-delay-secs", args["retry-delay-secs"]),
    },
  };
  await putConsumer(ctx, account, args.queue!, body);
  ctx.log.info(`✅ Added consumer ${args.script} to queue ${args.queue}`);
}

export async function deleteConsumer(args: { queue?: string; script?: string }, ctx: CliContext): Promise<void> {
  const account = await ctx.accountId();
  await removeConsumer(ctx, account, args.queue!, args.script);
  ctx.log.info(`✅ Removed consumer ${args.script} from queue ${args.queue}`);
}
