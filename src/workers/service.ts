import type { EdgeService, ServiceContext } from "../core/service.js";
import type { KvService } from "../kv/service.js";
import type { R2Service } from "../r2/service.js";

export function createWorkersService(_ctx: ServiceContext, _deps: { kv: KvService; r2: R2Service }): EdgeService {
  return { name: "workers" };
}
