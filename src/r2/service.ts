import type { IncomingMessage, ServerResponse } from "node:http";
import type { EdgeService, ServiceContext } from "../core/service.js";
import type { BucketRef, R2Store } from "./store.js";

/** Serves one workerd R2 binding request for the bucket the caller (the Workers runtime) injected. */
export type R2BindingHandler = (bucket: BucketRef, req: IncomingMessage, res: ServerResponse) => void;

export interface R2Service extends EdgeService {
  store: R2Store;
  bindingHandler: R2BindingHandler;
}

// Contract commit: the store and binding handler land in the next commits; until then the service exposes
// only its name so the platform keeps starting for the other areas.
export function createR2Service(_ctx: ServiceContext): R2Service {
  return { name: "r2" } as R2Service;
}
