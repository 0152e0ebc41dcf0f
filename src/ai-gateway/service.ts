import type { EdgeService, ServiceContext } from "../core/service.js";

export function createAiGatewayService(_ctx: ServiceContext): EdgeService {
  return { name: "ai-gateway" };
}
