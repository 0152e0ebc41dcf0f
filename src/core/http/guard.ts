import type { FastifyRequest } from "fastify";
import type { Permission } from "../auth/permissions.js";
import { CoreErrors } from "../errors.js";

/**
 * Where a guarded route's account comes from when it is not the `account_id` path parameter: e.g. a zone id's
 * account for the /zones routes. It may throw the area's own refusal (an unknown zone is a 404, not a 403); an
 * undefined answer is refused like an account the caller cannot see.
 */
export type AccountResolver = (req: FastifyRequest) => string | undefined | Promise<string | undefined>;

declare module "fastify" {
  interface FastifyContextConfig {
    /**
     * What a /client/v4 route needs, checked by one hook before the handler runs: this permission on the route's
     * account (`"any"`: some permission there, i.e. the caller sees the account); `"self"`: authentication alone,
     * for calls that act on the caller itself (/user) or list only what it sees (and filter by it). Every v4 route
     * declares one: `assertRouteDeclaresPermission` refuses to register a route without it.
     */
    permission?: Permission | "any" | "self";
    /**
     * The route's account: by default the `account_id` path parameter; a resolver for routes addressed by
     * another id; `"anywhere"` for user-level permissions (token management), held on any of the caller's accounts.
     */
    account?: AccountResolver | "anywhere";
    /**
     * The route checks a credential of its own instead of an API token (Workers' assets upload takes the upload
     * session's token as its bearer): the API's authentication is skipped, and the route must declare permission "self".
     */
    ownCredentials?: true;
  }
}

/**
 * The guard of the /client/v4 scope (a preHandler, so it runs after authentication and body parsing, where the
 * handlers' own checks used to run). Accounts the caller cannot see get the same answer as accounts that do not
 * exist (403, code 10000), so ids cannot be probed; a guarded route without an account is refused the same way.
 */
export async function guardRoute(req: FastifyRequest): Promise<void> {
  const { permission, account } = req.routeOptions.config;
  if (permission === "self" || (permission === undefined && account === undefined)) return;
  const p = req.principal;
  if (account === "anywhere") {
    if (permission === undefined || permission === "any" || !p.canAnywhere(permission)) throw CoreErrors.authentication();
    return;
  }
  const accountId = account ? await account(req) : (req.params as { account_id?: unknown } | undefined)?.account_id;
  if (typeof accountId !== "string") throw CoreErrors.authentication();
  const allowed = permission === undefined || permission === "any" ? p.accounts().includes(accountId) : p.can(accountId, permission);
  if (!allowed) throw CoreErrors.authentication();
}

/**
 * An onRoute hook of the /client/v4 scope: a route that does not say what it needs is a bug found at start, not an
 * open door found later (a forgotten check would otherwise let every authenticated caller in).
 */
export function assertRouteDeclaresPermission(route: { method: string | string[]; url: string; config?: unknown }): void {
  const permission = (route.config as { permission?: unknown } | undefined)?.permission;
  if (permission === undefined) {
    throw new Error(`route ${String(route.method)} ${route.url} declares no config.permission (a permission, "any" or "self"): see core/http/guard.ts`);
  }
}
