import type { EdgeService, ServiceContext } from "../core/service.js";

export interface R2Service extends EdgeService {}

export function createR2Service(_ctx: ServiceContext): R2Service {
  return { name: "r2" };
}
