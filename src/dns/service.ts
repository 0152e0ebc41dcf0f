import type { EdgeService, ServiceContext } from "../core/service.js";

export function createDnsService(_ctx: ServiceContext): EdgeService {
  return { name: "dns" };
}
