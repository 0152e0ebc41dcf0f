import type { FastifyInstance, FastifyRequest } from "fastify";
import { z } from "zod";
import { ApiError, Codes } from "../errors.js";
import { ok } from "../http/envelope.js";
import { pageOf, readPage } from "../http/pagination.js";
import { parseWith } from "../http/validate.js";
import { requireAccount } from "../http/app.js";
import type { AuthService } from "./auth-service.js";
import { ACCOUNT_ID_RE } from "./credentials.js";
import { PERMISSION_GROUPS, resolvePermission, type Permission } from "./permissions.js";
import type { Account, ApiTokenRecord, Grant, IdentityStore } from "./store.js";

const ACCOUNT_RESOURCE = "com.cloudflare.api.account.";

const tokenBody = z.object({
  name: z.string().min(1).max(120),
  /** The hosted API's shape: policies with permission groups and account resources. */
  policies: z
    .array(
      z.object({
        effect: z.enum(["allow"]).default("allow"),
        resources: z.record(z.string(), z.string()),
        permission_groups: z.array(z.object({ id: z.string().optional(), name: z.string().optional() })).min(1),
      }),
    )
    .optional(),
  /** A shorter shape: permission ids on one account (or every account of the user). */
  permissions: z.array(z.string()).optional(),
  account_id: z.string().optional(),
  not_before: z.string().datetime().nullable().optional(),
  expires_on: z.string().datetime().nullable().optional(),
});

function toGrants(body: z.infer<typeof tokenBody>, fixedAccount?: string): Grant[] {
  const perm = (s: string): Permission => {
    const p = resolvePermission(s);
    if (!p) throw new ApiError(400, Codes.validation, `Unknown permission group "${s}". See GET /user/tokens/permission_groups`);
    return p;
  };
  if (body.policies?.length) {
    return body.policies.flatMap((pol) =>
      Object.keys(pol.resources).map((res) => {
        if (!res.startsWith(ACCOUNT_RESOURCE)) {
          throw new ApiError(400, Codes.validation, `Unsupported resource "${res}": use ${ACCOUNT_RESOURCE}<account id> or ${ACCOUNT_RESOURCE}*`);
        }
        const acc = res.slice(ACCOUNT_RESOURCE.length);
        if (fixedAccount && acc !== fixedAccount) throw new ApiError(400, Codes.validation, `An account token can only reach account ${fixedAccount}`);
        return { account_id: acc, permissions: pol.permission_groups.map((g) => perm(g.id ?? g.name ?? "")) };
      }),
    );
  }
  if (body.permissions?.length) {
    const acc = fixedAccount ?? body.account_id ?? "*";
    return [{ account_id: acc, permissions: body.permissions.map(perm) }];
  }
  throw new ApiError(400, Codes.validation, "policies: a token needs at least one permission (policies or permissions)", { pointer: "/policies" });
}

/** The token object as the v4 API shows it; the value appears only in the create response. */
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

const accountView = (a: Account) => ({ id: a.id, name: a.name, type: "standard", settings: { enforce_twofactor: false }, created_on: a.created_on });

/** Identity endpoints: the calls wrangler, the SDKs and DNS tools make before anything else, and token management. */
export function registerIdentityRoutes(app: FastifyInstance, auth: AuthService, store: IdentityStore): void {
  const tokenRoutes = (prefix: string, accountOf: (req: FastifyRequest) => string | undefined) => {
    const ownToken = (req: FastifyRequest, id: string) => {
      const t = store.getToken(id);
      const acc = accountOf(req);
      if (!t || t.user_id !== req.principal.userId || (acc && !t.grants.every((g) => g.account_id === acc))) {
        throw new ApiError(404, 1003, "Token not found");
      }
      return t;
    };
    const check = (req: FastifyRequest, perm: Permission) => {
      const acc = accountOf(req);
      if (acc) requireAccount(req, acc, perm);
      else if (!req.principal.canAnywhere(perm)) throw new ApiError(403, Codes.authentication, "Authentication error");
    };

    app.get(`${prefix}/tokens/verify`, async (req) => {
      if (req.principal.kind !== "api_token") throw new ApiError(400, 1000, "Invalid API Token: verify takes an API token in the Authorization header");
      const t = store.getToken(req.principal.tokenId!)!;
      const acc = accountOf(req);
      if (acc && !t.grants.every((g) => g.account_id === acc)) throw new ApiError(401, 1000, "Invalid API Token");
      return ok({ id: t.id, status: t.status, not_before: t.not_before ?? undefined, expires_on: t.expires_on ?? undefined }, undefined, [
        { code: 10000, message: "This API Token is valid and active", type: null },
      ]);
    });
    app.get(`${prefix}/tokens/permission_groups`, async () =>
      ok(PERMISSION_GROUPS.map((g) => ({ id: g.id, name: g.name, scopes: [`com.cloudflare.api.${g.scope}`] }))),
    );
    app.get(`${prefix}/tokens`, async (req) => {
      check(req, "api_tokens_read");
      const acc = accountOf(req);
      const all = store.listTokens(req.principal.userId).filter((t) => !acc || t.grants.every((g) => g.account_id === acc));
      const page = readPage(req.query as Record<string, unknown>, { defaultPerPage: 20, maxPerPage: 50 });
      const { result, result_info } = pageOf(all.map(tokenView), page);
      return ok(result, result_info);
    });
    app.post(`${prefix}/tokens`, async (req) => {
      check(req, "api_tokens_edit");
      const body = parseWith(tokenBody, req.body);
      const { token, value } = auth.createToken(req.principal, {
        name: body.name,
        grants: toGrants(body, accountOf(req)),
        not_before: body.not_before,
        expires_on: body.expires_on,
      });
      req.log.info({ tokenId: token.id }, "api token created");
      return ok({ ...tokenView(token), value });
    });
    app.get<{ Params: { id: string } }>(`${prefix}/tokens/:id`, async (req) => {
      check(req, "api_tokens_read");
      return ok(tokenView(ownToken(req, req.params.id)));
    });
    app.delete<{ Params: { id: string } }>(`${prefix}/tokens/:id`, async (req) => {
      check(req, "api_tokens_edit");
      const t = ownToken(req, req.params.id);
      auth.deleteToken(t.id);
      req.log.info({ tokenId: t.id }, "api token revoked");
      return ok({ id: t.id });
    });
  };

  tokenRoutes("/user", () => undefined);
  tokenRoutes("/accounts/:account_id", (req) => (req.params as { account_id: string }).account_id);

  app.get("/user", async (req) => {
    const u = store.getUser(req.principal.userId)!;
    return ok({
      id: u.id,
      email: u.email,
      first_name: null,
      last_name: null,
      username: u.email.split("@")[0],
      telephone: null,
      country: null,
      zipcode: null,
      created_on: u.created_on,
      modified_on: u.created_on,
      two_factor_authentication_enabled: false,
      suspended: false,
    });
  });

  const visibleAccounts = (req: FastifyRequest) =>
    req.principal
      .accounts()
      .map((id) => store.getAccount(id))
      .filter((a): a is Account => !!a);

  app.get("/accounts", async (req) => {
    const q = req.query as Record<string, unknown>;
    let list = visibleAccounts(req);
    if (typeof q.name === "string") list = list.filter((a) => a.name.toLowerCase().includes((q.name as string).toLowerCase()));
    const dir = q.direction === "desc" ? -1 : 1;
    list.sort((a, b) => dir * a.name.localeCompare(b.name));
    const { result, result_info } = pageOf(list.map(accountView), readPage(q, { defaultPerPage: 20, maxPerPage: 50 }));
    return ok(result, result_info);
  });
  app.post("/accounts", async (req) => {
    if (req.principal.kind !== "global_key") throw new ApiError(403, Codes.authentication, "Creating an account needs the global API key");
    const body = parseWith(z.object({ name: z.string().min(1).max(200) }), req.body);
    const a = store.createAccount(body.name);
    store.addMembership(req.principal.userId, a.id);
    auth.invalidate();
    return ok(accountView(a));
  });
  app.get<{ Params: { account_id: string } }>("/accounts/:account_id", async (req) => {
    const id = req.params.account_id;
    if (!ACCOUNT_ID_RE.test(id) || !req.principal.accounts().includes(id)) throw new ApiError(403, Codes.authentication, "Authentication error");
    return ok(accountView(store.getAccount(id)!));
  });
  app.get("/memberships", async (req) => {
    const list = visibleAccounts(req).map((a) => ({
      id: a.id,
      status: "accepted",
      account: { id: a.id, name: a.name },
      roles: ["Administrator"],
      permissions: Object.fromEntries(req.principal.permissionsOn(a.id).map((p) => [p, { read: true, write: p.endsWith("_edit") || p.endsWith("_run") }])),
    }));
    const { result, result_info } = pageOf(list, readPage(req.query as Record<string, unknown>, { defaultPerPage: 20, maxPerPage: 50 }));
    return ok(result, result_info);
  });
}
