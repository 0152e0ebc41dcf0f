import { ALL_PERMISSIONS, expandPermissions, type Permission } from "./permissions.js";
import type { Grant } from "./store.js";

/** Who is calling, and what they may do where. Built once per credential and cached by the auth service. */
export class Principal {
  private readonly byAccount = new Map<string, Set<Permission>>();

  constructor(
    readonly kind: "global_key" | "api_token",
    readonly userId: string,
    readonly email: string,
    /** Accounts the user is a member of: no grant reaches beyond them. */
    readonly memberOf: ReadonlySet<string>,
    grants: readonly Grant[],
    readonly tokenId?: string,
  ) {
    for (const g of grants) {
      const targets = g.account_id === "*" ? [...memberOf] : memberOf.has(g.account_id) ? [g.account_id] : [];
      for (const acc of targets) {
        const set = this.byAccount.get(acc) ?? new Set<Permission>();
        for (const p of expandPermissions(g.permissions)) set.add(p);
        this.byAccount.set(acc, set);
      }
    }
  }

  static forGlobalKey(userId: string, email: string, memberOf: ReadonlySet<string>): Principal {
    return new Principal("global_key", userId, email, memberOf, [{ account_id: "*", permissions: [...ALL_PERMISSIONS] }]);
  }

  can(accountId: string, permission: Permission): boolean {
    return this.byAccount.get(accountId)?.has(permission) ?? false;
  }

  /** User-level permissions (token management) count if granted on any account. */
  canAnywhere(permission: Permission): boolean {
    for (const set of this.byAccount.values()) if (set.has(permission)) return true;
    return this.kind === "global_key";
  }

  accounts(): string[] {
    return [...this.byAccount.keys()];
  }

  permissionsOn(accountId: string): Permission[] {
    return [...(this.byAccount.get(accountId) ?? [])];
  }
}
