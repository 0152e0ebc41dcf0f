import type { Logger } from "../core/logger.js";
import type { QueuesWorkers } from "../queues/service.js";
import type { ScriptDeployer } from "./deployer.js";
import type { WorkersRuntime } from "./runtime/runtime.js";
import type { WorkersStore } from "./store.js";

/**
 * What Queues needs of Workers: whether a script exists, running a consumer's queue() on its workerd, and running a
 * script that became or ceased to be a consumer again (here, then on the other nodes through a notice).
 */
export function workersForQueues(
  store: WorkersStore,
  runtime: WorkersRuntime,
  deployer: ScriptDeployer,
  log: Logger,
  notify: (name: string) => Promise<void>,
): QueuesWorkers {
  return {
    scriptExists: async (accountId, name) => (await store.get(accountId, name)) !== undefined,
    producersOf: async (accountId) => {
      const producers = new Map<string, string[]>();
      for (const s of await store.list(accountId)) {
        for (const b of s.bindings) {
          if (b.type !== "queue") continue;
          const scripts = producers.get(b.queue_name) ?? [];
          if (!scripts.includes(s.name)) scripts.push(s.name);
          producers.set(b.queue_name, scripts);
        }
      }
      return producers;
    },
    consumersChanged: async (accountId, names) => {
      for (const name of names) {
        if (!(await store.get(accountId, name))) continue;
        // The consumer is recorded either way: a script that cannot start again keeps running as it was (and is
        // not delivered to) until it next starts.
        await deployer
          .sync(name)
          .catch((err: unknown) => log.error({ script: name, err: (err as Error).message }, "could not restart the Worker after its queue consumers changed"));
        await notify(name);
      }
    },
    deliverer: {
      // Script names are unique platform-wide; the account check keeps a consumer from reaching another account's script.
      // During a gradual deployment either version may take the batch (pickWith prefers the one with queue()), so
      // the consumer is ready when one of them has queue(), not only the primary.
      ready: (c) => runtime.runtimesOf(c.script_name).some((rt) => rt.accountId === c.account_id && rt.queueConsumer && rt.handlers.includes("queue")),
      deliver: async (c, messages, timeoutMs) => {
        // During a gradual deployment, a batch goes to one of the two versions, by share (to the one with queue() if only one has it).
        const rt = runtime.pickWith(c.script_name, "queue");
        const outcome = rt && rt.accountId === c.account_id ? await rt.runQueue(c.queue_name, messages, timeoutMs) : undefined;
        if (!outcome) throw new Error(`the Worker ${c.script_name} does not run here with a queue() handler`);
        return outcome;
      },
    },
  };
}
