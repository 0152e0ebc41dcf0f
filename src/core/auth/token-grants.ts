import { ACCOUNT_RESOURCE, IdentityErrors } from "./errors.js";
import type { Permission } from "./permissions.js";
import type { Principal } from "./principal.js";
import type { ApiTokenRecord, Grant } from "./store.js";

/** In a request only: "every account where the caller holds these permissions", resolved before anything is stored. */
export const ANY_ACCOUNT = "*";

/** What a create or update request asks for: permissions on one account, or on ANY_ACCOUNT. */
export interface GrantRequest {
  account_id: string;
  permissions: Permission[];
}

const beyondCaller = IdentityErrors.beyondCaller;

/**
 * Turns what a request asks for into concrete grants the caller holds now. ANY_ACCOUNT becomes one grant per
 * account where the caller holds some of the permissions (only those), so a token never reaches an account its
 * creator could not, not even one the user joins later. A permission held nowhere, or a named account or
 * permission the caller lacks, refuses the whole request (400, 1001) rather than quietly narrowing it.
 */
export function resolveGrants(caller: Principal, requested: readonly GrantRequest[]): Grant[] {
  const grants: Grant[] = [];
  for (const r of requested) {
    const permissions = [...new Set(r.permissions)];
    if (r.account_id !== ANY_ACCOUNT) {
      grants.push({ account_id: r.account_id, permissions });
      continue;
    }
    const held = caller
      .accounts()
      .map((account_id) => ({ account_id, permissions: permissions.filter((p) => caller.can(account_id, p)) }))
      .filter((g) => g.permissions.length > 0);
    for (const p of permissions) if (!held.some((g) => g.permissions.includes(p))) throw beyondCaller(p, ANY_ACCOUNT);
    grants.push(...held);
  }
  assertHeldBy(caller, grants);
  return grants;
}

/** Refuses (400, 1001, naming the grant) unless the caller holds every permission of every grant itself. */
export function assertHeldBy(caller: Principal, grants: readonly Grant[]): void {
  for (const g of grants) for (const p of g.permissions) if (!caller.can(g.account_id, p)) throw beyondCaller(p, g.account_id);
}

/**
 * Whether the caller may see and manage a token: one of its own user's, reaching no account beyond the caller's.
 * The global key is the user itself and manages all of the user's tokens.
 */
export function inScopeOf(caller: Principal, token: ApiTokenRecord): boolean {
  if (token.user_id !== caller.userId) return false;
  if (caller.kind === "global_key") return true;
  const reach = new Set(caller.accounts());
  return token.grants.every((g) => reach.has(g.account_id));
}
