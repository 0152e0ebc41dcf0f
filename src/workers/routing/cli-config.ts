import type { CliContext } from "../../core/cli/context.js";
import type { ProjectConfig } from "../../core/cli/config-file.js";
import { UserError } from "../../core/errors.js";
import { effectiveKeys } from "../cli/config-sections.js";

/** A route of the config as wrangler 3 takes it: a pattern, or a table with a zone or `custom_domain = true`. */
interface ConfigRoute {
  pattern: string;
  zone_id?: string;
  zone_name?: string;
  custom_domain?: boolean;
}

/** What `routes`/`route` and `workers_dev` ask of a deploy (wrangler's triggers/deploy.ts decides the same way). */
export interface RoutesSection {
  routes: { pattern: string; zone_id?: string; zone_name?: string }[];
  customDomains: { hostname: string; zone_id?: string; zone_name?: string }[];
  /** Whether the Worker is served at `<name>.<workers domain>`: `workers_dev`, else only when there are no routes. */
  workersDev: boolean;
  /** Whether the config says anything about where the Worker is served (else the deploy leaves it as it is). */
  given: boolean;
}

function routeOf(path: string, raw: unknown): ConfigRoute {
  if (typeof raw === "string") return { pattern: raw };
  const r = raw as Partial<ConfigRoute> | null;
  const known = ["pattern", "zone_id", "zone_name", "custom_domain"];
  if (
    typeof r !== "object" ||
    r === null ||
    Array.isArray(r) ||
    typeof r.pattern !== "string" ||
    Object.keys(r).some((k) => !known.includes(k)) ||
    (r.zone_id !== undefined && typeof r.zone_id !== "string") ||
    (r.zone_name !== undefined && typeof r.zone_name !== "string") ||
    (r.custom_domain !== undefined && typeof r.custom_domain !== "boolean")
  ) {
    throw new UserError(`${path}: a route is a pattern ("example.com/*") or a table { pattern, zone_id | zone_name, custom_domain }`);
  }
  return r as ConfigRoute;
}

/** The config's routes, Custom Domains and `workers_dev`, checked before anything is uploaded. */
export function routesSection(cfg: ProjectConfig | undefined): RoutesSection {
  const keys = cfg ? effectiveKeys(cfg) : new Map<string, { value: unknown }>();
  const rawRoutes = keys.get("routes")?.value;
  const rawRoute = keys.get("route")?.value;
  const workersDev = keys.get("workers_dev")?.value;
  const path = cfg?.path ?? "";
  if (rawRoutes !== undefined && rawRoute !== undefined) throw new UserError(`${path}: give either "routes" or "route", not both`);
  if (rawRoutes !== undefined && !Array.isArray(rawRoutes)) throw new UserError(`${path}: "routes" must be an array`);
  if (workersDev !== undefined && typeof workersDev !== "boolean") throw new UserError(`${path}: "workers_dev" must be true or false`);
  const all = (rawRoutes as unknown[] | undefined) ?? (rawRoute === undefined ? [] : [rawRoute]);
  const section: RoutesSection = {
    routes: [],
    customDomains: [],
    workersDev: workersDev ?? all.length === 0,
    given: all.length > 0 || workersDev !== undefined,
  };
  for (const raw of all) {
    const { pattern, custom_domain, ...zone } = routeOf(path, raw);
    if (!custom_domain) {
      section.routes.push({ pattern, ...zone });
      continue;
    }
    if (pattern.includes("*")) throw new UserError(`${path}: Custom Domain "${pattern}": wildcard operators (*) are not allowed in Custom Domains`);
    if (pattern.includes("/")) throw new UserError(`${path}: Custom Domain "${pattern}": paths are not allowed in Custom Domains`);
    section.customDomains.push({ hostname: pattern, ...zone });
  }
  return section;
}

/** Applies the section after the upload, as wrangler does: the Worker's URL, its routes, then its Custom Domains. Returns the targets to print. */
export async function applyRoutes(ctx: CliContext, section: RoutesSection, scriptPath: string): Promise<string[]> {
  if (!section.given) return [];
  const api = ctx.api();
  await api.fetchEnvelope("POST", `${scriptPath}/subdomain`, { json: { enabled: section.workersDev } });
  const targets: string[] = [];
  if (section.routes.length > 0) {
    await api.fetchEnvelope("PUT", `${scriptPath}/routes`, { json: section.routes });
    for (const r of section.routes)
      targets.push(r.zone_name ? `${r.pattern} (zone name: ${r.zone_name})` : r.zone_id ? `${r.pattern} (zone id: ${r.zone_id})` : r.pattern);
  }
  if (section.customDomains.length > 0) {
    // As wrangler does without a terminal to confirm on: a hostname another Worker of the account holds is moved here.
    const body = { override_scope: true, override_existing_origin: true, override_existing_dns_record: true, origins: section.customDomains };
    await api.fetchEnvelope("PUT", `${scriptPath}/domains/records`, { json: body });
    for (const d of section.customDomains) targets.push(`${d.hostname} (custom domain)`);
  }
  return targets;
}
