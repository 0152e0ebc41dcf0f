import type { FastifyInstance, FastifyRequest } from "fastify";
import { z } from "zod";
import { ok } from "../http/envelope.js";
import { pageOf, readPage } from "../http/pagination.js";
import { parseWith } from "../http/validate.js";
import type { AuthService } from "./auth-service.js";
import { IdentityErrors } from "./errors.js";
import { membershipRoles } from "./permissions.js";
import type { Account } from "./store.js";
import { registerTokenRoutes } from "./token-routes.js";

const accountView = (a: Account) => ({ id: a.id, name: a.name, type: "standard", settings: { enforce_twofactor: false }, created_on: a.created_on });

/** Identity endpoints: the calls wrangler, the SDKs and DNS tools make before anything else, and token management. */
/** Routes that act on the caller itself, or list only what it sees: authentication is all they need. */
const self = { config: { permission: "self" } } as const;

export function registerIdentityRoutes(app: FastifyInstance, auth: AuthService): void {
  registerTokenRoutes(app, auth);

  app.get("/user", self, async (req) => {
    const u = await auth.userOf(req.principal);
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
      .map((id) => req.principal.account(id))
      .filter((a): a is Account => !!a);

  app.get("/accounts", self, async (req) => {
    const q = req.query as Record<string, unknown>;
    let list = visibleAccounts(req);
    if (typeof q.name === "string") list = list.filter((a) => a.name.toLowerCase().includes((q.name as string).toLowerCase()));
    const dir = q.direction === "desc" ? -1 : 1;
    list.sort((a, b) => dir * a.name.localeCompare(b.name));
    const { result, result_info } = pageOf(list.map(accountView), readPage(q, { defaultPerPage: 20, maxPerPage: 50 }));
    return ok(result, result_info);
  });
  app.post("/accounts", self, async (req) => {
    if (req.principal.kind !== "global_key") throw IdentityErrors.createAccountNeedsGlobalKey();
    const body = parseWith(z.object({ name: z.string().min(1).max(200) }), req.body);
    return ok(accountView(await auth.createAccount(req.principal.userId, body.name)));
  });
  app.get<{ Params: { account_id: string } }>("/accounts/:account_id", { config: { permission: "any" } }, async (req) =>
    ok(accountView(req.principal.account(req.params.account_id)!)),
  );
  app.get("/memberships", self, async (req) => {
    const list = visibleAccounts(req).map((a) => ({
      id: a.id,
      status: "accepted",
      account: { id: a.id, name: a.name },
      roles: membershipRoles(req.principal.permissionsOn(a.id)),
      permissions: Object.fromEntries(req.principal.permissionsOn(a.id).map((p) => [p, { read: true, write: p.endsWith("_edit") || p.endsWith("_run") }])),
    }));
    const { result, result_info } = pageOf(list, readPage(req.query as Record<string, unknown>, { defaultPerPage: 20, maxPerPage: 50 }));
    return ok(result, result_info);
  });
}
