import type { CliContext } from "../../core/cli/context.js";
import { UserError } from "../../core/errors.js";
import type { NotificationAction } from "../notifications/store.js";

/**
 * The account's queue of that name, by the v4 API (the CLI is the API's client: it asks, as wrangler does, rather
 * than reach into Queues' own CLI); a clear error when there is none.
 */
async function queueNamed(ctx: CliContext, account: string, name: string): Promise<{ queue_id: string; queue_name: string }> {
  const found = await ctx
    .api()
    .fetchResult<{ queue_id: string; queue_name: string }[]>("GET", `/accounts/${encodeURIComponent(account)}/queues`, { query: { name } });
  const queue = found.find((q) => q.queue_name === name);
  if (!queue) throw new UserError(`Queue "${name}" does not exist in this account: create it with \`edgecli queues create ${name}\``);
  return queue;
}

/** The event types wrangler 3 takes, and the actions each stands for (in wrangler's order). */
const EVENT_TYPES: Record<string, NotificationAction[]> = {
  "object-create": ["PutObject", "CompleteMultipartUpload", "CopyObject"],
  "object-delete": ["DeleteObject", "LifecycleDeletion"],
};

interface RuleView {
  ruleId: string;
  createdAt: string;
  prefix: string;
  suffix: string;
  actions: string[];
  description: string;
}
interface ConfigView {
  bucketName: string;
  queues: { queueId: string; queueName: string; rules: RuleView[] }[];
}

const configPath = (account: string, bucket: string) => `/accounts/${account}/event_notifications/r2/${encodeURIComponent(bucket)}/configuration`;

function required(value: string | undefined, flag: string): string {
  if (value === undefined || value === "") throw new UserError(`Missing required option --${flag}`);
  return value;
}

/** `edgecli r2 bucket notification create <bucket> --event-types ... --queue <name>` */
export async function createRule(
  args: { bucket?: string; "event-types"?: string[]; "event-type"?: string[]; queue?: string; prefix?: string; suffix?: string; description?: string },
  ctx: CliContext,
): Promise<void> {
  const types = [...(args["event-types"] ?? []), ...(args["event-type"] ?? [])];
  if (types.length === 0) throw new UserError(`Missing required option --event-types (${Object.keys(EVENT_TYPES).join(", ")})`);
  const actions: NotificationAction[] = [];
  for (const t of types) {
    const forType = Object.hasOwn(EVENT_TYPES, t) ? EVENT_TYPES[t] : undefined;
    if (!forType) throw new UserError(`Unknown event type "${t}": use ${Object.keys(EVENT_TYPES).join(" or ")}`);
    for (const a of forType) if (!actions.includes(a)) actions.push(a);
  }
  const queueName = required(args.queue, "queue");
  const account = await ctx.accountId();
  const queue = await queueNamed(ctx, account, queueName);
  const rule: Record<string, unknown> = { actions, prefix: args.prefix ?? "", suffix: args.suffix ?? "" };
  if (args.description !== undefined) rule.description = args.description;
  ctx.log.info(`Creating event notification rule for ${args.bucket} (${actions.join(",")}) to queue ${queueName}...`);
  await ctx.api().fetchResult("PUT", `${configPath(account, args.bucket!)}/queues/${queue.queue_id}`, { json: { rules: [rule] } });
  ctx.log.info("Event notification rule created successfully!");
}

/** `edgecli r2 bucket notification list <bucket>` */
export async function listRules(args: { bucket?: string; json?: boolean }, ctx: CliContext): Promise<void> {
  const account = await ctx.accountId();
  const config = await ctx.api().fetchResult<ConfigView>("GET", configPath(account, args.bucket!));
  if (args.json) {
    ctx.log.info(JSON.stringify(config, null, 2));
    return;
  }
  const rows = config.queues.flatMap((q) =>
    q.rules.map((r) =>
      [
        `rule_id:      ${r.ruleId}`,
        `created_at:   ${r.createdAt}`,
        `queue_name:   ${q.queueName}`,
        `prefix:       ${r.prefix || "(all prefixes)"}`,
        `suffix:       ${r.suffix || "(all suffixes)"}`,
        `event_type:   ${r.actions.join(",")}`,
        ...(r.description ? [`description:  ${r.description}`] : []),
      ].join("\n"),
    ),
  );
  ctx.log.info(rows.length === 0 ? `Bucket ${args.bucket} has no event notification rules.` : rows.join("\n\n"));
}

/** `edgecli r2 bucket notification delete <bucket> --queue <name> [--rule <id>]` */
export async function deleteRules(args: { bucket?: string; queue?: string; rule?: string }, ctx: CliContext): Promise<void> {
  const queueName = required(args.queue, "queue");
  const account = await ctx.accountId();
  const queue = await queueNamed(ctx, account, queueName);
  const path = `${configPath(account, args.bucket!)}/queues/${queue.queue_id}`;
  if (args.rule !== undefined) {
    ctx.log.info(`Deleting event notification rule "${args.rule}"...`);
    await ctx.api().fetchResult("DELETE", path, { json: { ruleIds: [args.rule] } });
  } else {
    ctx.log.info(`Deleting every event notification rule of bucket ${args.bucket} that sends to queue ${queueName}...`);
    await ctx.api().fetchResult("DELETE", path);
  }
  ctx.log.info("Event notification rule deleted successfully!");
}
