import type { FastifyInstance, FastifyRequest } from "fastify";
import { EdgeError } from "../core/errors.js";
import { requireAccount } from "../core/http/app.js";
import { ok } from "../core/http/envelope.js";
import { readPage, resultInfo } from "../core/http/pagination.js";
import { parseWith } from "../core/http/validate.js";
import { AigCodes } from "./codes.js";
import { createGatewayBody, updateGatewayBody } from "./gateway-schema.js";
import type { GatewayStore } from "./gateway-store.js";

type Req = FastifyRequest<{ Params: { account_id: string; id: string }; Querystring: Record<string, string> }>;

export const gatewayNotFound = (id: string) => new EdgeError(404, AigCodes.notFound, `Not Found: no gateway "${id}" in this account`);

/** Gateway CRUD: /accounts/{account_id}/ai-gateway/gateways[/{id}]. */
export function registerGatewayRoutes(
  app: FastifyInstance,
  store: GatewayStore,
  onChange: (accountId: string, id: string, invalidateCache: boolean) => void,
): void {
  const base = "/accounts/:account_id/ai-gateway/gateways";

  app.get(base, async (req: Req) => {
    requireAccount(req, req.params.account_id, "ai_gateway_read");
    const page = readPage(req.query, { defaultPerPage: 20, maxPerPage: 100, code: AigCodes.validation });
    const { items, total } = store.list(req.params.account_id, String(req.query.search ?? ""), page.perPage, page.offset);
    return ok(items, resultInfo(page, items.length, total));
  });

  app.post(base, async (req: Req) => {
    requireAccount(req, req.params.account_id, "ai_gateway_edit");
    const { id, ...settings } = parseWith(createGatewayBody, req.body ?? {}, AigCodes.validation);
    const g = store.create(req.params.account_id, id, settings);
    if (!g) throw new EdgeError(409, AigCodes.validation, `id: a gateway "${id}" already exists`, { pointer: "/id" });
    return ok(g);
  });

  app.get(`${base}/:id`, async (req: Req) => {
    requireAccount(req, req.params.account_id, "ai_gateway_read");
    return ok(
      store.get(req.params.account_id, req.params.id) ??
        (() => {
          throw gatewayNotFound(req.params.id);
        })(),
    );
  });

  app.put(`${base}/:id`, async (req: Req) => {
    requireAccount(req, req.params.account_id, "ai_gateway_edit");
    const { id, ...settings } = parseWith(updateGatewayBody, req.body ?? {}, AigCodes.validation);
    if (id !== undefined && id !== req.params.id) throw new EdgeError(400, AigCodes.validation, "id: a gateway's id cannot change", { pointer: "/id" });
    const g = store.update(req.params.account_id, req.params.id, settings);
    if (!g) throw gatewayNotFound(req.params.id);
    onChange(g.account_id, g.id, g.cache_invalidate_on_update);
    return ok(g);
  });

  app.delete(`${base}/:id`, async (req: Req) => {
    requireAccount(req, req.params.account_id, "ai_gateway_edit");
    const g = store.delete(req.params.account_id, req.params.id);
    if (!g) throw gatewayNotFound(req.params.id);
    onChange(g.account_id, g.id, true);
    return ok(g);
  });
}
