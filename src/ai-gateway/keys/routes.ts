import type { FastifyInstance, FastifyRequest } from "fastify";
import { z } from "zod";
import { ok } from "../../core/http/envelope.js";
import { readPage, resultInfo } from "../../core/http/pagination.js";
import { parseWith } from "../../core/http/validate.js";
import { AigCodes, AigErrors } from "../errors.js";
import type { GatewayDirectory } from "../gateways/directory.js";
import type { ProviderRegistry } from "../providers/registry.js";
import type { ProviderKey } from "./store.js";
import type { ProviderKeyring } from "./keyring.js";

/** Most provider keys one gateway holds: bounds what the keyring keeps per gateway. */
export const MAX_KEYS_PER_GATEWAY = 100;

/**
 * What an answer shows in place of the key. The hosted API shows a masked preview of it; here no part of a stored key
 * is ever shown again, so the field is there (clients expect it) but says nothing.
 */
export const SECRET_PREVIEW = "********";

type Req = FastifyRequest<{ Params: { account_id: string; id: string; key_id: string }; Querystring: Record<string, string> }>;

/** A provider key goes in an HTTP header as it is: printable ASCII without spaces (every provider's keys are). */
const secret = z
  .string()
  .min(1)
  .max(8192)
  .regex(/^[\x21-\x7e]+$/, "must be the provider's key: printable ASCII characters, no spaces or line breaks");

/** Accepted only while off; the message names what is missing here (zod adds the field's name in front). */
const offOnly = (rule: string) => z.union([z.literal(0), z.null()], { message: rule }).optional();

const createBody = z.object({
  provider_slug: z.string().min(1).max(64),
  alias: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[A-Za-z0-9_-]+$/, "must be letters, digits, _ and -")
    .optional()
    .default("default"),
  default_config: z.boolean().optional().default(false),
  // What is not supported here comes before `secret`, so a body naming a Secrets Store secret instead is told why.
  secret_id: z.null({ message: "a Secrets Store secret is not supported here; send the key itself in secret" }).optional(),
  rate_limit: offOnly("per-key rate limits are not supported here; only 0 or null is accepted (the gateway's rate_limiting_limit applies)"),
  rate_limit_period: offOnly("per-key rate limits are not supported here; only 0 or null is accepted"),
  secret,
});
const replaceBody = z.object({ secret });

/** An answer for a stored key: never the key, nor a hash of it. */
const shown = (k: ProviderKey) => ({ ...k, secret_preview: SECRET_PREVIEW });

interface KeyRouteDeps {
  gateways: GatewayDirectory;
  keyring: ProviderKeyring;
  providers: ProviderRegistry;
}

/**
 * Provider keys of a gateway (the hosted API's provider configs):
 * /accounts/{account_id}/ai-gateway/gateways/{id}/provider_configs[/{key_id}]. Reading them needs AI Gateway Edit,
 * as writing does: they are the account's provider credentials.
 */
export function registerProviderKeyRoutes(app: FastifyInstance, d: KeyRouteDeps): void {
  const base = "/accounts/:account_id/ai-gateway/gateways/:id/provider_configs";
  const edit = { config: { permission: "ai_gateway_edit" } } as const;

  /** The gateway of the path, in the caller's account: its keys are reached through it only. */
  const gatewayOf = async (req: Req): Promise<string> => {
    const g = await d.gateways.get(req.params.account_id, req.params.id);
    if (!g) throw AigErrors.gatewayNotFound(req.params.id);
    return g.id;
  };

  app.get(base, edit, async (req: Req) => {
    const page = readPage(req.query, { defaultPerPage: 20, maxPerPage: 100, code: AigCodes.validation });
    const all = await d.keyring.store.list(req.params.account_id, await gatewayOf(req));
    const items = all.slice(page.offset, page.offset + page.perPage).map(shown);
    return ok(items, resultInfo(page, items.length, all.length));
  });

  app.post(base, edit, async (req: Req) => {
    const body = parseWith(createBody, req.body ?? {}, AigCodes.validation);
    const provider = d.providers.get(body.provider_slug);
    if (!provider) throw AigErrors.unknownKeyProvider(body.provider_slug, d.providers.ids());
    const gatewayId = await gatewayOf(req);
    const key = { provider_slug: provider.id, alias: body.alias, default_config: body.default_config };
    return ok(shown(await d.keyring.create(req.params.account_id, gatewayId, key, body.secret, MAX_KEYS_PER_GATEWAY)));
  });

  app.get(`${base}/:key_id`, edit, async (req: Req) => {
    const k = await d.keyring.store.get(req.params.account_id, await gatewayOf(req), req.params.key_id);
    if (!k) throw AigErrors.providerKeyNotFound(req.params.key_id, req.params.id);
    return ok(shown(k));
  });

  app.put(`${base}/:key_id`, edit, async (req: Req) => {
    const body = parseWith(replaceBody, req.body ?? {}, AigCodes.validation);
    const k = await d.keyring.replaceSecret(req.params.account_id, await gatewayOf(req), req.params.key_id, body.secret);
    if (!k) throw AigErrors.providerKeyNotFound(req.params.key_id, req.params.id);
    return ok(shown(k));
  });

  app.delete(`${base}/:key_id`, edit, async (req: Req) => {
    const k = await d.keyring.delete(req.params.account_id, await gatewayOf(req), req.params.key_id);
    if (!k) throw AigErrors.providerKeyNotFound(req.params.key_id, req.params.id);
    return ok(shown(k));
  });
}
