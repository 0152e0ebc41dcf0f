import type { FastifyInstance, FastifyRequest } from "fastify";
import { z } from "zod";
import { ok } from "../http/envelope.js";
import { pageOf, readPage } from "../http/pagination.js";
import { parseWith } from "../http/validate.js";
import type { AuthService, TokenInput } from "./auth-service.js";
import { ACCOUNT_ID_RE } from "./credentials.js";
import { ACCOUNT_RESOURCE, IdentityCodes, IdentityErrors } from "./errors.js";
import { PERMISSION_GROUPS, resolvePermission, type Permission } from "./permissions.js";
import type { ApiTokenRecord } from "./store.js";
import { ANY_ACCOUNT, type GrantRequest } from "./token-grants.js";

/** IP conditions are not enforced here, so a request that sets one is refused rather than minting an unrestricted token. */
const noIpCondition = z.array(z.string()).max(0, "IP conditions (condition.request_ip) are not supported").optional();

const tokenBody = z.object({
  name: z.string().min(1).max(120),
  /** The hosted API's shape: policies with permission groups and account resources (none or `*`: the caller's accounts). */
  policies: z
    .array(
      z.object({
        effect: z.enum(["allow"]).default("allow"),
        resources: z.record(z.string(), z.string()).optional(),
        permission_groups: z
          .array(z.object({ id: z.string().optional(), name: z.string().optional() }))
          .min(1)
          .max(PERMISSION_GROUPS.length * 2),
      }),
    )
    .max(50)
    .optional(),
  /** A shorter shape: permission ids on one account (or every account where the caller holds them). */
  permissions: z
    .array(z.string())
    .max(PERMISSION_GROUPS.length * 2)
    .optional(),
  account_id: z.string().optional(),
  not_before: z.string().datetime().nullable().optional(),
  expires_on: z.string().datetime().nullable().optional(),
  condition: z.object({ request_ip: z.object({ in: noIpCondition, not_in: noIpCondition }).optional() }).optional(),
});

const updateBody = tokenBody.extend({ status: z.enum(["active", "disabled"]).optional() });

/** Reads the requested grants; `*` (or no resources) stays ANY_ACCOUNT until the auth service resolves it against the caller. */
function requestedGrants(body: z.infer<typeof tokenBody>, fixedAccount?: string): GrantRequest[] {
  const perm = (s: string): Permission => {
    const p = resolvePermission(s);
    if (!p) throw IdentityErrors.unknownPermission(s);
    return p;
  };
  const account = (res: string): string => {
    if (!res.startsWith(ACCOUNT_RESOURCE)) throw IdentityErrors.unsupportedResource(res);
    const acc = res.slice(ACCOUNT_RESOURCE.length);
    if (acc === ANY_ACCOUNT) return fixedAccount ?? ANY_ACCOUNT;
    if (!ACCOUNT_ID_RE.test(acc)) throw IdentityErrors.malformedAccountResource(res);
    if (fixedAccount && acc !== fixedAccount) throw IdentityErrors.otherAccount(fixedAccount);
    return acc;
  };
  if (body.policies?.length) {
    return body.policies.flatMap((pol) => {
      const permissions = pol.permission_groups.map((g) => perm(g.id ?? g.name ?? ""));
      const resources = Object.keys(pol.resources ?? {});
      const accounts = resources.length ? resources.map(account) : [fixedAccount ?? ANY_ACCOUNT];
      return accounts.map((account_id) => ({ account_id, permissions }));
    });
  }
  if (body.permissions?.length) {
    return [{ account_id: fixedAccount ?? body.account_id ?? ANY_ACCOUNT, permissions: body.permissions.map(perm) }];
  }
  throw IdentityErrors.noPermission();
}

const tokenInput = (body: z.infer<typeof tokenBody>, fixedAccount?: string): TokenInput => ({
  name: body.name,
  grants: requestedGrants(body, fixedAccount),
  not_before: body.not_before,
  expires_on: body.expires_on,
});

/** The token object as the v4 API shows it; the value appears only in the create and roll responses. */
export function tokenView(t: ApiTokenRecord) {
  return {
    id: t.id,
    name: t.name,
    status: t.status,
    issued_on: t.issued_on,
    modified_on: t.modified_on,
    last_used_on: t.last_used_on,
    not_before: t.not_before,
    expires_on: t.expires_on,
    policies: t.grants.map((g, i) => ({
      id: `${t.id.slice(0, 24)}${String(i).padStart(8, "0")}`,
      effect: "allow",
      resources: { [`${ACCOUNT_RESOURCE}${g.account_id}`]: "*" },
      permission_groups: g.permissions.map((p) => ({ id: p, name: PERMISSION_GROUPS.find((x) => x.id === p)!.name })),
    })),
    condition: {},
  };
}

/**
 * Token management under `prefix` (`/user`, or `/accounts/:account_id` where every token shown reaches that
 * account only). A caller sees and manages only its own user's tokens that reach no account beyond its own;
 * the rest answer 404/1003 like unknown ids. Grants it hands out (create, update, roll) are ones it holds.
 * The token permissions are user-level: under /user they count when held on any account, under an account
 * when held on that account.
 */
function registerTokenRoutesAt(app: FastifyInstance, auth: AuthService, prefix: string, accountOf: (req: FastifyRequest) => string | undefined): void {
  const account = prefix === "/user" ? "anywhere" : undefined;
  const read = { config: { permission: "api_tokens_read", account } } as const;
  const edit = { config: { permission: "api_tokens_edit", account } } as const;
  // A token verifies itself (under an account, only when all its grants are on that account); the groups are public.
  const self = { config: { permission: "self" } } as const;
  const onThisAccount = (req: FastifyRequest, t: ApiTokenRecord) => {
    const acc = accountOf(req);
    return !acc || t.grants.every((g) => g.account_id === acc);
  };
  const ownToken = async (req: FastifyRequest, id: string) => {
    const t = await auth.tokenFor(req.principal, id);
    if (!onThisAccount(req, t)) throw IdentityErrors.tokenNotFound();
    return t;
  };

  app.get(`${prefix}/tokens/verify`, self, async (req) => {
    if (req.principal.kind !== "api_token") throw IdentityErrors.verifyNeedsToken();
    const t = await auth.currentToken(req.principal);
    if (!onThisAccount(req, t)) throw IdentityErrors.invalidToken();
    return ok({ id: t.id, status: t.status, not_before: t.not_before ?? undefined, expires_on: t.expires_on ?? undefined }, undefined, [
      { code: IdentityCodes.tokenValid, message: "This API Token is valid and active", type: null },
    ]);
  });
  app.get(`${prefix}/tokens/permission_groups`, self, async () =>
    ok(PERMISSION_GROUPS.map((g) => ({ id: g.id, name: g.name, scopes: [`com.cloudflare.api.${g.scope}`] }))),
  );
  app.get(`${prefix}/tokens`, read, async (req) => {
    const visible = (await auth.tokensOf(req.principal)).filter((t) => onThisAccount(req, t));
    const page = readPage(req.query as Record<string, unknown>, { defaultPerPage: 20, maxPerPage: 50 });
    const { result, result_info } = pageOf(visible.map(tokenView), page);
    return ok(result, result_info);
  });
  app.post(`${prefix}/tokens`, edit, async (req) => {
    const { token, value } = await auth.createToken(req.principal, tokenInput(parseWith(tokenBody, req.body), accountOf(req)));
    req.log.info({ tokenId: token.id }, "api token created");
    return ok({ ...tokenView(token), value });
  });
  app.get<{ Params: { id: string } }>(`${prefix}/tokens/:id`, read, async (req) => ok(tokenView(await ownToken(req, req.params.id))));
  app.put<{ Params: { id: string } }>(`${prefix}/tokens/:id`, edit, async (req) => {
    const id = (await ownToken(req, req.params.id)).id;
    const body = parseWith(updateBody, req.body);
    const token = await auth.updateToken(req.principal, id, { ...tokenInput(body, accountOf(req)), status: body.status });
    req.log.info({ tokenId: id }, "api token updated");
    return ok(tokenView(token));
  });
  app.put<{ Params: { id: string } }>(`${prefix}/tokens/:id/value`, edit, async (req) => {
    const value = await auth.rollToken(req.principal, (await ownToken(req, req.params.id)).id);
    req.log.info({ tokenId: req.params.id }, "api token rolled");
    return ok(value);
  });
  app.delete<{ Params: { id: string } }>(`${prefix}/tokens/:id`, edit, async (req) => {
    const t = await auth.deleteToken(req.principal, (await ownToken(req, req.params.id)).id);
    req.log.info({ tokenId: t.id }, "api token revoked");
    return ok({ id: t.id });
  });
}

/** `/user/tokens` and `/accounts/{account_id}/tokens`: the hosted API's token management. */
export function registerTokenRoutes(app: FastifyInstance, auth: AuthService): void {
  registerTokenRoutesAt(app, auth, "/user", () => undefined);
  registerTokenRoutesAt(app, auth, "/accounts/:account_id", (req) => (req.params as { account_id: string }).account_id);
}
