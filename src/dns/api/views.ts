import type { Permission } from "../../core/auth/permissions.js";
import type { DnsRecord, Zone } from "../model.js";
import { hasData, hasPriority, TYPES } from "../records/types.js";

/** The record object as the hosted v4 API answers it, every field present (clients read fields unconditionally). */
export function recordView(r: DnsRecord, zoneName: string, managedBy?: string) {
  return {
    id: r.id,
    zone_id: r.zone_id,
    zone_name: zoneName,
    name: r.name,
    type: r.type,
    content: r.content,
    proxiable: TYPES[r.type].proxiable,
    proxied: r.proxied,
    ttl: r.ttl,
    locked: false,
    ...(hasPriority(r.type) ? { priority: r.priority } : {}),
    ...(hasData(r.type) ? { data: r.data } : {}),
    // A record another product keeps (a Worker Custom Domain's) is marked read-only; `managed_by` says what keeps it.
    meta: {
      auto_added: false,
      managed_by_apps: false,
      managed_by_edge_tunnel: false,
      source: "primary",
      ...(managedBy !== undefined && { read_only: true, managed_by: managedBy }),
    },
    comment: r.comment,
    tags: r.tags,
    settings: r.settings,
    created_on: r.created_on,
    modified_on: r.modified_on,
    ...(r.comment_modified_on ? { comment_modified_on: r.comment_modified_on } : {}),
    ...(r.tags_modified_on ? { tags_modified_on: r.tags_modified_on } : {}),
  };
}

/** The one plan a zone has here; a zone PATCH may name it, and no other. */
export const ZONE_PLAN = {
  id: "0feeeeeeeeeeeeeeeeeeeeeeeeeeeeee",
  name: "Free Website",
  price: 0,
  currency: "USD",
  frequency: "",
  is_subscribed: false,
  can_subscribe: false,
  legacy_id: "free",
  legacy_discount: false,
  externally_managed: false,
} as const;

/**
 * What the caller may do with a zone, in the hosted API's words, from its permissions on the zone's account:
 * dns_edit reads and edits the zone (pause, delete, DNS settings) and its records; dns_read only reads them.
 */
function zonePermissions(held: readonly Permission[]): string[] {
  if (held.includes("dns_edit")) return ["#dns_records:edit", "#dns_records:read", "#zone:edit", "#zone:read"];
  if (held.includes("dns_read")) return ["#dns_records:read", "#zone:read"];
  return [];
}

export function zoneView(z: Zone, caller: { accountName: string; permissions: readonly Permission[] }, nameServers: string[]) {
  return {
    id: z.id,
    name: z.name,
    status: "active",
    paused: z.paused,
    type: z.type ?? "full",
    development_mode: 0,
    name_servers: nameServers,
    original_name_servers: null,
    original_registrar: null,
    original_dnshost: null,
    vanity_name_servers: [],
    created_on: z.created_on,
    modified_on: z.modified_on,
    activated_on: z.activated_on,
    account: { id: z.account_id, name: caller.accountName },
    owner: { id: null, name: null, type: "user" },
    plan: ZONE_PLAN,
    meta: { step: 2, custom_certificate_quota: 0, page_rule_quota: 3, phishing_detected: false },
    permissions: zonePermissions(caller.permissions),
  };
}
