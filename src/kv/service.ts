import type { EdgeService, ServiceContext } from "../core/service.js";

export interface KvService extends EdgeService {}

export function createKvService(_ctx: ServiceContext): KvService {
  return { name: "kv" };
}
