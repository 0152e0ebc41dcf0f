import type { ResourceExists } from "../deployer.js";
import type { BindingHandler } from "./server.js";

/**
 * What an area whose data Workers' bindings reach hands over (src/platform.ts builds it from the area's service):
 * whether a resource of an account exists (checked at upload), and the server of its binding protocol.
 */
export interface BindingBackend {
  exists(accountId: string, resource: string): Promise<boolean>;
  handle: BindingHandler;
}

/** The areas behind the data bindings: R2 buckets, KV namespaces, D1 databases, queues (producers). */
export type DataBindingBackends = Readonly<Record<"r2" | "kv" | "d1" | "queues", BindingBackend>>;

/**
 * Whether the resource a binding names exists: the data areas answer for theirs, a service binding names a Worker
 * of the account; an assets, tail, outbound or cache binding names no resource, so it is never the target of a check.
 */
export function resourceExists(data: DataBindingBackends, scriptExists: (accountId: string, name: string) => Promise<boolean>): ResourceExists {
  return async (backend, accountId, resource) => {
    if (backend === "service") return scriptExists(accountId, resource);
    if (backend === "assets" || backend === "tail" || backend === "outbound" || backend === "cache") return false;
    return data[backend].exists(accountId, resource);
  };
}
