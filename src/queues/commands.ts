import { defineCommand, type AnyCommand, type CommandAlias } from "../core/cli/command.js";
import type { DeploySectionEntry } from "../core/cli/deploy-sections.js";
import { lazy } from "../core/cli/lazy.js";

export { serveOptions } from "./config.js";

const queuePositional = { name: "name", describe: "The queue's name", required: true } as const;

/** The queue settings `create` and `update` take, named as wrangler names them. */
const settingOptions = {
  "delivery-delay-secs": { type: "number", describe: "Seconds every message sent without its own delay waits, 0-43200 (default 0)" },
  "message-retention-period-secs": {
    type: "number",
    describe: "Seconds a message may wait before it is removed undelivered, 60-1209600 (default 345600, 4 days)",
  },
} as const;

/** `[[queues.producers]]` and `[[queues.consumers]]`, read by `edgecli deploy` (cli/deploy-config.ts). */
export const deploySections: DeploySectionEntry[] = [{ key: "queues", load: async () => (await import("./cli/deploy-config.js")).queuesDeploySection }];

export const groups: Record<string, string> = {
  queues: "Manage Queues: create and delete queues, and the Workers that consume them",
  "queues consumer": "Add or remove a queue's Worker consumer (edgecli deploy does it from [[queues.consumers]])",
};

export const commands: AnyCommand[] = [
  defineCommand({
    path: ["queues", "create"],
    describe: "Create a queue",
    positionals: [{ name: "name", describe: 'The queue name: 1-63 lowercase letters, digits and "-"', required: true }] as const,
    options: settingOptions,
    examples: ["edgecli queues create my-queue", "edgecli queues create my-queue --delivery-delay-secs 5 --message-retention-period-secs 3600"],
    handler: lazy(() => import("./cli/queues.js"), "createQueue"),
  }),
  defineCommand({
    path: ["queues", "update"],
    describe: "Change a queue's delivery delay or retention period (the settings not given stay)",
    positionals: [queuePositional] as const,
    options: settingOptions,
    examples: ["edgecli queues update my-queue --message-retention-period-secs 86400"],
    handler: lazy(() => import("./cli/queues.js"), "updateQueue"),
  }),
  defineCommand({
    path: ["queues", "pause-delivery"],
    describe: "Stop delivering a queue's messages to its consumer (sends are still taken)",
    positionals: [queuePositional] as const,
    examples: ["edgecli queues pause-delivery my-queue"],
    handler: lazy(() => import("./cli/queues.js"), "pauseDelivery"),
  }),
  defineCommand({
    path: ["queues", "resume-delivery"],
    describe: "Deliver a paused queue's messages again",
    positionals: [queuePositional] as const,
    examples: ["edgecli queues resume-delivery my-queue"],
    handler: lazy(() => import("./cli/queues.js"), "resumeDelivery"),
  }),
  defineCommand({
    path: ["queues", "list"],
    describe: "List the account's queues",
    options: { json: { type: "boolean", describe: "Print JSON instead of a table" } },
    examples: ["edgecli queues list", "edgecli queues list --json"],
    handler: lazy(() => import("./cli/queues.js"), "listQueues"),
  }),
  defineCommand({
    path: ["queues", "info"],
    describe: "Show a queue and its consumer",
    positionals: [queuePositional] as const,
    options: { json: { type: "boolean", describe: "Print JSON" } },
    examples: ["edgecli queues info my-queue"],
    handler: lazy(() => import("./cli/queues.js"), "queueInfo"),
  }),
  defineCommand({
    path: ["queues", "delete"],
    describe: "Delete a queue with its messages and consumer (asks first)",
    positionals: [queuePositional] as const,
    options: { "skip-confirmation": { type: "boolean", alias: "y", describe: "Do not ask (needed without a terminal)" } },
    examples: ["edgecli queues delete my-queue", "edgecli queues delete my-queue -y"],
    handler: lazy(() => import("./cli/queues.js"), "deleteQueue"),
  }),
  defineCommand({
    path: ["queues", "purge"],
    describe: "Delete every message of a queue, permanently (asks first; --force does not)",
    positionals: [queuePositional] as const,
    options: { force: { type: "boolean", describe: "Purge without asking (needed without a terminal)" } },
    examples: ["edgecli queues purge my-queue", "edgecli queues purge my-queue --force"],
    handler: lazy(() => import("./cli/queues.js"), "purgeQueue"),
  }),
  defineCommand({
    path: ["queues", "consumer", "add"],
    describe: "Make a Worker the consumer of a queue (or change its settings)",
    positionals: [
      { name: "queue", describe: "The queue", required: true },
      { name: "script", describe: "The Worker whose queue() handler gets the batches", required: true },
    ] as const,
    options: {
      "batch-size": { type: "number", describe: "Messages per batch, 1-100 (default 10)" },
      "batch-timeout": { type: "number", describe: "Seconds to wait for a full batch, 0-60 (default 5)" },
      "message-retries": { type: "number", describe: "Retries of a message before it is dead-lettered or dropped, 0-100 (default 3)" },
      "dead-letter-queue": { type: "string", describe: "The queue that gets messages whose retries are spent" },
      "retry-delay-secs": { type: "number", describe: "Seconds a retried message waits unless retry() names a delay (default 0)" },
    },
    examples: ["edgecli queues consumer add my-queue my-worker --batch-size 50 --dead-letter-queue my-dlq"],
    handler: lazy(() => import("./cli/queues.js"), "addConsumer"),
  }),
  defineCommand({
    path: ["queues", "consumer", "remove"],
    describe: "Stop a Worker consuming a queue",
    positionals: [
      { name: "queue", describe: "The queue", required: true },
      { name: "script", describe: "The consuming Worker", required: true },
    ] as const,
    examples: ["edgecli queues consumer remove my-queue my-worker"],
    handler: lazy(() => import("./cli/queues.js"), "deleteConsumer"),
  }),
];

export const aliases: CommandAlias[] = [];
