import type { CliContext } from "../../core/cli/context.js";
import type { ProjectConfig } from "../../core/cli/config-file.js";
import type { DeploySection, UploadBinding } from "../../core/cli/deploy-sections.js";
import { UserError } from "../../core/errors.js";
import { putConsumer, type ConsumerBody } from "./consumers.js";

const isTable = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

const PRODUCER_KEYS = ["binding", "queue"];
const CONSUMER_KEYS = ["queue", "type", "max_batch_size", "max_batch_timeout", "max_retries", "dead_letter_queue", "retry_delay", "visibility_timeout_ms"];

/** The config's `queues` table (`section`), checked: `[[queues.producers]]` and `[[queues.consumers]]`, lists of tables. */
function queuesSection(cfg: ProjectConfig, section: unknown): { producers: Record<string, unknown>[]; consumers: Record<string, unknown>[] } {
  if (section === undefined) return { producers: [], consumers: [] };
  const list = (key: string) => {
    const v = (section as Record<string, unknown>)[key];
    if (v === undefined) return [];
    if (!Array.isArray(v) || !v.every(isTable)) throw new UserError(`${cfg.path}: "queues.${key}" must be a list of tables ([[queues.${key}]])`);
    return v;
  };
  if (!isTable(section) || Object.keys(section).some((k) => k !== "producers" && k !== "consumers")) {
    throw new UserError(`${cfg.path}: "queues" must be a table with producers and consumers ([[queues.producers]], [[queues.consumers]])`);
  }
  return { producers: list("producers"), consumers: list("consumers") };
}

/** Refuses a key this platform does not know (it may change what runs), naming it as written. */
function onlyKeys(cfg: ProjectConfig, entry: Record<string, unknown>, allowed: string[], where: string): void {
  const extra = Object.keys(entry).find((k) => !allowed.includes(k));
  if (extra === "max_concurrency") {
    throw new UserError(`${cfg.path}: ${where}: max_concurrency is not supported: each node delivers one batch of a queue at a time`);
  }
  if (extra) throw new UserError(`${cfg.path}: ${where}: "${extra}" is not supported here (known: ${allowed.join(", ")})`);
}

const str = (cfg: ProjectConfig, v: unknown, where: string, key: string): string => {
  if (typeof v !== "string" || v === "") throw new UserError(`${cfg.path}: ${where} needs "${key}" (a string)`);
  return v;
};
const int = (cfg: ProjectConfig, v: unknown, where: string, key: string): number | undefined => {
  if (v === undefined) return undefined;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0) throw new UserError(`${cfg.path}: ${where}: "${key}" must be a whole number`);
  return v;
};

/** The config's `[[queues.producers]]` as upload bindings (the shape wrangler 3 sends: type queue, queue_name). */
function queueProducerBindings(cfg: ProjectConfig, section: unknown): UploadBinding[] {
  return queuesSection(cfg, section).producers.map((p, i) => {
    const where = `queues.producers[${i}]`;
    onlyKeys(cfg, p, PRODUCER_KEYS, where);
    return { type: "queue", name: str(cfg, p.binding, where, "binding"), queue_name: str(cfg, p.queue, where, "queue") };
  });
}

/** The config's `[[queues.consumers]]` as the API's consumer bodies for `script`, with the queue each is for. */
function queueConsumers(cfg: ProjectConfig, section: unknown, script: string): { queue: string; body: ConsumerBody }[] {
  return queuesSection(cfg, section).consumers.map((c, i) => {
    const where = `queues.consumers[${i}]`;
    onlyKeys(cfg, c, CONSUMER_KEYS, where);
    const type = c.type === undefined ? "worker" : c.type;
    if (type !== "worker" && type !== "http_pull") throw new UserError(`${cfg.path}: ${where}: "type" must be "worker" or "http_pull"`);
    const timeout = int(cfg, c.max_batch_timeout, where, "max_batch_timeout");
    const dlq = c.dead_letter_queue === undefined ? undefined : str(cfg, c.dead_letter_queue, where, "dead_letter_queue");
    return {
      queue: str(cfg, c.queue, where, "queue"),
      body: {
        type,
        ...(type === "worker" ? { script_name: script } : {}),
        ...(dlq ? { dead_letter_queue: dlq } : {}),
        settings: {
          batch_size: int(cfg, c.max_batch_size, where, "max_batch_size"),
          max_retries: int(cfg, c.max_retries, where, "max_retries"),
          max_wait_time_ms: timeout === undefined ? undefined : timeout * 1000,
          retry_delay: int(cfg, c.retry_delay, where, "retry_delay"),
          visibility_timeout_ms: int(cfg, c.visibility_timeout_ms, where, "visibility_timeout_ms"),
        },
      },
    };
  });
}

/**
 * What `edgecli deploy` does with the config's `queues`: producer bindings in the upload; after it, the script made
 * the consumer of each `[[queues.consumers]]` queue, as wrangler deploy does.
 */
export const queuesDeploySection: DeploySection = {
  bindings: (section, cfg) => queueProducerBindings(cfg, section),
  check: (section, cfg, script) => void queueConsumers(cfg, section, script),
  async apply(ctx, section, cfg, accountId, script) {
    const done: string[] = [];
    for (const { queue, body } of queueConsumers(cfg, section, script)) {
      await putConsumer(ctx, accountId, queue, body);
      done.push(`Consumer for ${queue}`);
    }
    return done;
  },
};
