import type { FastifyInstance, FastifyRequest } from "fastify";
import { ok } from "../../core/http/envelope.js";
import { readPage, resultInfo } from "../../core/http/pagination.js";
import { parseWith } from "../../core/http/validate.js";
import { AigCodes, AigErrors } from "../errors.js";
import type { GatewayDirectory } from "./directory.js";
import { createGatewayBody, updateGatewayBody } from "./schema.js";

type Req = FastifyRequest<{ Params: { account_id: string; id: string }; Querystring: Record<string, string> }>;

const read = { config: { permission: "ai_gateway_read" } } as const;
const edit = { config: { permission: "ai_gateway_edit" } } as const;

/** Gateway CRUD: /accounts/{account_id}/ai-gateway/gateways[/{id}]. */
export function registerGatewayRoutes(app: FastifyInstance, gateways: GatewayDirectory): void {
  const base = "/accounts/:account_id/ai-gateway/gateways";

  app.get(base, read, async (req: Req) => {
    const page = readPage(req.query, { defaultPerPage: 20, maxPerPage: 100, code: AigCodes.validation });
    const { items, total } = await gateways.list(req.params.account_id, String(req.query.search ?? ""), page.perPage, page.offset);
    return ok(items, resultInfo(page, items.length, total));
  });

  app.post(base, edit, async (req: Req) => {
    const { id, ...settings } = parseWith(createGatewayBody, req.body ?? {}, AigCodes.validation);
    return ok(await gateways.create(req.params.account_id, id, settings));
  });

  app.get(`${base}/:id`, read, async (req: Req) => {
    const g = await gateways.get(req.params.account_id, req.params.id);
    if (!g) throw AigErrors.gatewayNotFound(req.params.id);
    return ok(g);
  });

  app.put(`${base}/:id`, edit, async (req: Req) => {
    const { id, ...settings } = parseWith(updateGatewayBody, req.body ?? {}, AigCodes.validation);
    if (id !== undefined && id !== req.params.id) throw AigErrors.gatewayIdChanged();
    return ok(await gateways.update(req.params.account_id, req.params.id, settings));
  });

  app.delete(`${base}/:id`, edit, async (req: Req) => ok(await gateways.delete(req.params.account_id, req.params.id)));
}
