import { ALL_PERMISSIONS, expandPermissions, type Permission } from "./permissions.js";
import type { Account, Grant } from "./store.js";

/** Who is calling, and what they may do where. Built once per credential and cached by the auth service. */
export class Principal {
  private readonly byAccount = new Map<string, Set<Permission>>();

  constructor(
    readonly kind: "global_key" | "api_token",
    readonly userId: string,
    readonly email: string,
    /** Accounts the user is a member of: no grant reaches beyond them. */
    readonly memberOf: ReadonlySet<string>,
    /** Concrete accounts only: a token's reach is fixed when it is created and never widens (no `*` here). */
    grants: readonly Grant[],
    readonly tokenId?: string,
    /** The accounts the user is a member of, as the store had them, so views of them need no store call. */
    private readonly accountRecords: ReadonlyMap<string, Account> = new Map(),
  ) {
    for (const g of grants) {
      // A grant on an account the user has left (or a stray "*") reaches nothing.
      if (!memberOf.has(g.account_id)) continue;
      const set = this.byAccount.get(g.account_id) ?? new Set<Permission>();
      for (const p of expandPermissions(g.permissions)) set.add(p);
      this.byAccount.set(g.account_id, set);
    }
  }

  /** The global key is the user: every permission on every account the user is a member of now. */
  static forGlobalKey(userId: string, email: string, memberOf: ReadonlySet<string>, accountRecords?: ReadonlyMap<string, Account>): Principal {
    const grants = [...memberOf].map((account_id) => ({ account_id, permissions: [...ALL_PERMISSIONS] }));
    return new Principal("global_key", userId, email, memberOf, grants, undefined, accountRecords);
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

  /** An account the caller sees, with its name (undefined for any other). */
  account(accountId: string): Account | undefined {
    return this.byAccount.has(accountId) ? this.accountRecords.get(accountId) : undefined;
  }

  permissionsOn(accountId: string): Permission[] {
    return [...(this.byAccount.get(accountId) ?? [])];
  }
}
