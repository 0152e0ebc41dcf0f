import { z } from "zod";
import { capnpString } from "../runtime/capnp-string.js";
import { bindingName, type BindingType } from "./binding-type.js";
import { WorkersErrors } from "../errors.js";

export interface QueueBinding {
  type: "queue";
  name: string;
  /** The queue's name in the script's account (wrangler 3 sends `queue_name`). */
  queue_name: string;
}

/**
 * A queue producer (`env.Q.send`, `sendBatch`, `metrics`): workerd's own queue binding, whose calls go to the
 * Queues area through the binding server, for the queue of that name in the script's account.
 */
export const queueProducer: BindingType<QueueBinding> = {
  type: "queue",
  schema: z.object({
    type: z.literal("queue"),
    name: bindingName(),
    queue_name: z.string().min(1).max(63),
    /**
     * wrangler sends a producer's own `delivery_delay`; workerd's binding cannot carry it to us, so a delay is refused
     * rather than dropped (the queue's delivery_delay or each message's delaySeconds do the same).
     */
    delivery_delay: z
      .number()
      .refine((v) => v === 0, "a delivery_delay on a queue binding is not supported here: set the queue's delivery_delay or each message's delaySeconds")
      .optional(),
  }),
  target: { backend: "queues", resource: (b) => b.queue_name, missing: (b) => WorkersErrors.queueMissing(b.name, b.queue_name) },
  workerd: (b, ctx) => `queue = ${capnpString(ctx.bindingService("queues", b.queue_name))}`,
};
