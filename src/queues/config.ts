import type { OptionSpec, OptionValues } from "../core/cli/command.js";
import { UserError } from "../core/errors.js";
import { QUEUES_LIMITS } from "./limits.js";

/** Queues' part of `edgecli serve`: its options (defaults live only here) and the settings read from them. */
export const serveOptions = {
  "queue-consumer-timeout": {
    type: "number",
    describe:
      "Seconds a consumer's queue() may run on one batch; its messages stay leased that long, then are delivered again (the hosted wall-clock limit is 900)",
    default: 900,
  },
  "queue-poll-interval": {
    type: "number",
    describe: "Seconds between looks at the queues for due batches (sends through this node wake it at once)",
    default: 1,
  },
  "queue-backlog-max-bytes": {
    type: "number",
    describe:
      "Bytes of message bodies one queue may hold (sent and not yet acknowledged); a send past it is refused whole with Storage Limit Exceeded. The same for every queue of every account (the hosted limit is 25 GB)",
    default: QUEUES_LIMITS.backlogBytes,
  },
  "queue-retention-sweep-interval": {
    type: "number",
    describe:
      "Seconds between sweeps that remove messages older than their queue's message_retention_period (expired messages are never delivered, swept or not)",
    default: 30,
  },
} satisfies Record<string, OptionSpec>;

export interface QueuesConfig {
  leaseMs: number;
  pollMs: number;
  /** The most bytes of message bodies one queue holds. */
  backlogMaxBytes: number;
  /** How often expired messages are swept (ms). */
  sweepIntervalMs: number;
}

export function readQueuesConfig(options: OptionValues<typeof serveOptions>): QueuesConfig {
  const backlog = options["queue-backlog-max-bytes"];
  // A cap that is not a number would refuse every send (or none): say so at start instead.
  if (!Number.isSafeInteger(backlog) || backlog < 1)
    throw new UserError(`--queue-backlog-max-bytes must be a whole number of bytes, 1 or more; got ${backlog}`);
  return {
    leaseMs: Math.max(1000, Math.round(options["queue-consumer-timeout"] * 1000)),
    pollMs: Math.max(50, Math.round(options["queue-poll-interval"] * 1000)),
    backlogMaxBytes: backlog,
    sweepIntervalMs: Math.max(1000, Math.round(options["queue-retention-sweep-interval"] * 1000)),
  };
}
