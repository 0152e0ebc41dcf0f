/**
 * Permission groups a token can carry. `id` is what the token API takes and answers;
 * an edit permission implies the read permission of the same area.
 */
export const PERMISSION_GROUPS = [
  { id: "dns_read", name: "DNS Read", scope: "account" },
  { id: "dns_edit", name: "DNS Edit", scope: "account" },
  { id: "kv_read", name: "Workers KV Storage Read", scope: "account" },
  { id: "kv_edit", name: "Workers KV Storage Edit", scope: "account" },
  { id: "r2_read", name: "Workers R2 Storage Read", scope: "account" },
  { id: "r2_edit", name: "Workers R2 Storage Edit", scope: "account" },
  { id: "workers_read", name: "Workers Scripts Read", scope: "account" },
  { id: "workers_edit", name: "Workers Scripts Edit", scope: "account" },
  { id: "ai_gateway_read", name: "AI Gateway Read", scope: "account" },
  { id: "ai_gateway_edit", name: "AI Gateway Edit", scope: "account" },
  { id: "ai_gateway_run", name: "AI Gateway Run", scope: "account" },
  { id: "d1_read", name: "D1 Read", scope: "account" },
  { id: "d1_edit", name: "D1 Edit", scope: "account" },
  { id: "queues_read", name: "Queues Read", scope: "account" },
  { id: "queues_edit", name: "Queues Edit", scope: "account" },
  { id: "zone_settings_read", name: "Zone Settings Read", scope: "account" },
  { id: "zone_settings_edit", name: "Zone Settings Edit", scope: "account" },
  { id: "cache_purge", name: "Cache Purge", scope: "account" },
  // Hosted: "Cache Settings Read/Write" is the group the Rulesets API takes for the phase http_request_cache_settings.
  { id: "cache_rules_read", name: "Cache Settings Read", scope: "account" },
  { id: "cache_rules_edit", name: "Cache Settings Edit", scope: "account" },
  { id: "ssl_and_certificates_read", name: "SSL and Certificates Read", scope: "account" },
  { id: "ssl_and_certificates_edit", name: "SSL and Certificates Write", scope: "account" },
  { id: "account_settings_read", name: "Account Settings Read", scope: "account" },
  { id: "analytics_read", name: "Analytics Read", scope: "account" },
  { id: "api_tokens_read", name: "API Tokens Read", scope: "user" },
  { id: "api_tokens_edit", name: "API Tokens Edit", scope: "user" },
] as const;

export type Permission = (typeof PERMISSION_GROUPS)[number]["id"];

export const ALL_PERMISSIONS: readonly Permission[] = PERMISSION_GROUPS.map((g) => g.id);

const IMPLIED: Partial<Record<Permission, Permission[]>> = {
  dns_edit: ["dns_read"],
  kv_edit: ["kv_read"],
  r2_edit: ["r2_read"],
  workers_edit: ["workers_read"],
  ai_gateway_edit: ["ai_gateway_read"],
  api_tokens_edit: ["api_tokens_read"],
  d1_edit: ["d1_read"],
  queues_edit: ["queues_read"],
  zone_settings_edit: ["zone_settings_read"],
  cache_rules_edit: ["cache_rules_read"],
  ssl_and_certificates_edit: ["ssl_and_certificates_read"],
};

export function expandPermissions(perms: Iterable<Permission>): Set<Permission> {
  const out = new Set<Permission>();
  for (const p of perms) {
    out.add(p);
    for (const q of IMPLIED[p] ?? []) out.add(q);
  }
  return out;
}

/** Accepts a permission group id ("dns_edit") or its display name ("DNS Edit"). */
export function resolvePermission(idOrName: string): Permission | undefined {
  const needle = idOrName.trim().toLowerCase();
  return PERMISSION_GROUPS.find((g) => g.id === needle || g.name.toLowerCase() === needle)?.id;
}

/**
 * The role a membership reports for what a credential holds on an account. Members have no stored roles here (a
 * member's global key holds everything), so the answer describes the caller's real reach: "Administrator" when it
 * holds every account permission, "Administrator Read Only" when it holds every read and nothing more, else the
 * names of the permission groups it holds.
 */
export function membershipRoles(held: Iterable<Permission>): string[] {
  const have = new Set(held);
  const account = PERMISSION_GROUPS.filter((g) => g.scope === "account");
  if (account.every((g) => have.has(g.id))) return ["Administrator"];
  const reads = account.filter((g) => g.id.endsWith("_read"));
  const writes = account.filter((g) => !g.id.endsWith("_read"));
  if (reads.every((g) => have.has(g.id)) && !writes.some((g) => have.has(g.id))) return ["Administrator Read Only"];
  return account.filter((g) => have.has(g.id)).map((g) => g.name);
}

export function isUserScoped(p: Permission): boolean {
  return PERMISSION_GROUPS.find((g) => g.id === p)?.scope === "user";
}
