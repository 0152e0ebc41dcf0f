import type { CustomDomain, WorkerRoute } from "./store.js";

export interface RouteRow {
  id: string;
  zone_id: string;
  account_id: string;
  pattern: string;
  script: string | null;
}

export interface DomainRow {
  id: string;
  account_id: string;
  zone_id: string;
  zone_name: string;
  hostname: string;
  service: string;
  environment: string;
}

export const ROUTE_COLUMNS = "id, zone_id, account_id, pattern, script";
export const DOMAIN_COLUMNS = "id, account_id, zone_id, zone_name, hostname, service, environment";

export const toRoute = (r: RouteRow): WorkerRoute => ({ id: r.id, zoneId: r.zone_id, accountId: r.account_id, pattern: r.pattern, script: r.script });
export const toDomain = (r: DomainRow): CustomDomain => ({
  id: r.id,
  accountId: r.account_id,
  zoneId: r.zone_id,
  zoneName: r.zone_name,
  hostname: r.hostname,
  service: r.service,
  environment: r.environment,
});
