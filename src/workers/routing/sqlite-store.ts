import type { Db } from "../../core/db/sqlite.js";
import { RoutesErrors } from "./errors.js";
import { DOMAIN_COLUMNS, ROUTE_COLUMNS, toDomain, toRoute, type DomainRow, type RouteRow } from "./rows.js";
import type { CustomDomain, RoutesStore, WorkerRoute } from "./store.js";

const isUniqueViolation = (err: unknown) => (err as { code?: string }).code === "SQLITE_CONSTRAINT_UNIQUE";

/** RoutesStore on SQLite (`<state>/db/worker-routes.sqlite`). */
export class SqliteRoutesStore implements RoutesStore {
  private readonly q;

  constructor(private readonly db: Db) {
    this.q = {
      zoneRoutes: db.prepare<[string], RouteRow>(`SELECT ${ROUTE_COLUMNS} FROM routes WHERE zone_id = ? ORDER BY rowid`),
      scriptRoutes: db.prepare<[string, string], RouteRow>(`SELECT ${ROUTE_COLUMNS} FROM routes WHERE account_id = ? AND script = ? ORDER BY rowid`),
      allRoutes: db.prepare<[], RouteRow>(`SELECT ${ROUTE_COLUMNS} FROM routes ORDER BY rowid`),
      addRoute: db.prepare<[string, string, string, string, string | null, string]>(
        "INSERT INTO routes (id, zone_id, account_id, pattern, script, created_on) VALUES (?, ?, ?, ?, ?, ?)",
      ),
      updateRoute: db.prepare<[string, string | null, string, string]>("UPDATE routes SET pattern = ?, script = ? WHERE id = ? AND zone_id = ?"),
      deleteRoute: db.prepare<[string, string]>("DELETE FROM routes WHERE zone_id = ? AND id = ?"),
      deleteScriptRoutes: db.prepare<[string, string]>("DELETE FROM routes WHERE account_id = ? AND script = ?"),
      deleteZoneRoutes: db.prepare<[string]>("DELETE FROM routes WHERE zone_id = ?"),
      domains: db.prepare<[string], DomainRow>(`SELECT ${DOMAIN_COLUMNS} FROM domains WHERE account_id = ? ORDER BY hostname`),
      allDomains: db.prepare<[], DomainRow>(`SELECT ${DOMAIN_COLUMNS} FROM domains ORDER BY hostname`),
      domainByHostname: db.prepare<[string], DomainRow>(`SELECT ${DOMAIN_COLUMNS} FROM domains WHERE hostname = ?`),
      insertDomain: db.prepare<[string, string, string, string, string, string, string]>(
        "INSERT INTO domains (id, account_id, zone_id, zone_name, hostname, service, environment) VALUES (?, ?, ?, ?, ?, ?, ?)",
      ),
      repointDomain: db.prepare<[string, string, string, string, string]>(
        "UPDATE domains SET service = ?, environment = ?, zone_id = ?, zone_name = ? WHERE id = ?",
      ),
      deleteDomain: db.prepare<[string, string]>("DELETE FROM domains WHERE account_id = ? AND id = ?"),
      deleteZoneDomains: db.prepare<[string]>("DELETE FROM domains WHERE zone_id = ?"),
      deleteScriptDomains: db.prepare<[string, string]>("DELETE FROM domains WHERE account_id = ? AND service = ?"),
      workersDevOn: db.prepare<[string, string]>("DELETE FROM workers_dev_off WHERE account_id = ? AND script = ?"),
      workersDevOffSet: db.prepare<[string, string]>("INSERT INTO workers_dev_off (account_id, script) VALUES (?, ?) ON CONFLICT DO NOTHING"),
      workersDevOff: db.prepare<[], { account_id: string; script: string }>("SELECT account_id, script FROM workers_dev_off ORDER BY account_id, script"),
    };
  }

  async zoneRoutes(zoneId: string): Promise<WorkerRoute[]> {
    return this.q.zoneRoutes.all(zoneId).map(toRoute);
  }

  async scriptRoutes(accountId: string, script: string): Promise<WorkerRoute[]> {
    return this.q.scriptRoutes.all(accountId, script).map(toRoute);
  }

  async allRoutes(): Promise<WorkerRoute[]> {
    return this.q.allRoutes.all().map(toRoute);
  }

  private insertRoute(r: WorkerRoute): void {
    try {
      this.q.addRoute.run(r.id, r.zoneId, r.accountId, r.pattern, r.script, new Date().toISOString());
    } catch (err) {
      throw isUniqueViolation(err) ? RoutesErrors.duplicateRoute(r.pattern) : err;
    }
  }

  async addRoute(route: WorkerRoute): Promise<void> {
    this.insertRoute(route);
  }

  async updateRoute(route: WorkerRoute): Promise<boolean> {
    try {
      return this.q.updateRoute.run(route.pattern, route.script, route.id, route.zoneId).changes > 0;
    } catch (err) {
      throw isUniqueViolation(err) ? RoutesErrors.duplicateRoute(route.pattern) : err;
    }
  }

  async deleteRoute(zoneId: string, id: string): Promise<boolean> {
    return this.q.deleteRoute.run(zoneId, id).changes > 0;
  }

  async replaceScriptRoutes(accountId: string, script: string, routes: readonly WorkerRoute[]): Promise<void> {
    this.db.transaction(() => {
      this.q.deleteScriptRoutes.run(accountId, script);
      for (const r of routes) this.insertRoute(r);
    })();
  }

  async domains(accountId: string): Promise<CustomDomain[]> {
    return this.q.domains.all(accountId).map(toDomain);
  }

  async allDomains(): Promise<CustomDomain[]> {
    return this.q.allDomains.all().map(toDomain);
  }

  async domainByHostname(hostname: string): Promise<CustomDomain | undefined> {
    const r = this.q.domainByHostname.get(hostname);
    return r && toDomain(r);
  }

  async putDomain(d: CustomDomain, override: boolean): Promise<CustomDomain> {
    return this.db.transaction(() => {
      const old = this.q.domainByHostname.get(d.hostname);
      if (!old) {
        this.q.insertDomain.run(d.id, d.accountId, d.zoneId, d.zoneName, d.hostname, d.service, d.environment);
        return d;
      }
      // A hostname never moves across accounts, override or not (its zone is checked to be the caller's first).
      if (old.account_id !== d.accountId || (old.service !== d.service && !override)) throw RoutesErrors.domainTaken(d.hostname, old.service);
      this.q.repointDomain.run(d.service, d.environment, d.zoneId, d.zoneName, old.id);
      return { ...d, id: old.id };
    })();
  }

  async deleteDomain(accountId: string, id: string): Promise<boolean> {
    return this.q.deleteDomain.run(accountId, id).changes > 0;
  }

  async deleteZone(zoneId: string): Promise<void> {
    this.db.transaction(() => {
      this.q.deleteZoneRoutes.run(zoneId);
      this.q.deleteZoneDomains.run(zoneId);
    })();
  }

  async deleteScript(accountId: string, script: string): Promise<void> {
    this.db.transaction(() => {
      this.q.deleteScriptRoutes.run(accountId, script);
      this.q.deleteScriptDomains.run(accountId, script);
      this.q.workersDevOn.run(accountId, script);
    })();
  }

  async setWorkersDev(accountId: string, script: string, enabled: boolean): Promise<void> {
    (enabled ? this.q.workersDevOn : this.q.workersDevOffSet).run(accountId, script);
  }

  async workersDevOff(): Promise<{ accountId: string; script: string }[]> {
    return this.q.workersDevOff.all().map((r) => ({ accountId: r.account_id, script: r.script }));
  }
}
