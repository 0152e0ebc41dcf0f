import type { IncomingMessage, ServerResponse } from "node:http";
import type { EdgeService, ServiceContext } from "../core/service.js";
import type { BucketRef, R2Store } from "./store.js";

/** Serves one workerd R2 binding request for the bucket the caller (the Workers runtime) injected. */
export type R2BindingHandler = (bucket: BucketRef, req: IncomingMessage, res: ServerResponse) => void;

export interface R2Service extends EdgeService {
  store: R2Store;
  bindingHandler: R2BindingHandler;
}

export function createR2Service(_ctx: ServiceContext): R2Service {
  throw new Error("R2 service is being written (contract commit only)");
}
