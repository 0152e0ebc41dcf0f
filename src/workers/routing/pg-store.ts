import type { Bus } from "../../core/cluster/bus.js";
import type { Postgres, SqlRunner, Transaction } from "../../core/db/postgres.js";
import { RoutesErrors } from "./errors.js";
import { DOMAIN_COLUMNS, ROUTE_COLUMNS, toDomain, toRoute, type DomainRow, type RouteRow } from "./rows.js";
import type { CustomDomain, RoutesStore, WorkerRoute } from "./store.js";

/** The PostgreSQL schema and bus area of routes and Custom Domains. */
export const ROUTES_AREA = "worker_routes";
/** The one notice: the routing table changed (it is small, and every node reads it whole again). */
export const ROUTES_CHANGED = "routes";

const isUniqueViolation = (err: unknown) => (err as { code?: string }).code === "23505";

/**
 * RoutesStore on PostgreSQL (schema `worker_routes`, ROUTES_PG_MIGRATIONS), shared by every node. Every change sends
 * the notice `routes` from inside its transaction, so that the other nodes read the routing table again (table.ts).
 */
export class PgRoutesStore implements RoutesStore {
  constructor(
    private readonly pg: Postgres,
    private readonly bus: Bus,
  ) {}

  private changed(tx: Transaction): Promise<void> {
    return this.bus.publish(ROUTES_AREA, ROUTES_CHANGED, tx);
  }

  /** Runs `write` in a transaction that announces the change when it changed something. */
  private write<T>(write: (tx: Transaction) => Promise<T>): Promise<T> {
    return this.pg.withTransaction(async (tx) => {
      const result = await write(tx);
      if (result !== false) await this.changed(tx);
      return result;
    });
  }

  private routes(on: SqlRunner, where: string, params: unknown[]): Promise<WorkerRoute[]> {
    return on.rows<RouteRow>(`SELECT ${ROUTE_COLUMNS} FROM worker_routes.routes ${where} ORDER BY seq`, params).then((rows) => rows.map(toRoute));
  }

  zoneRoutes(zoneId: string): Promise<WorkerRoute[]> {
    return this.routes(this.pg, "WHERE zone_id = $1", [zoneId]);
  }

  scriptRoutes(accountId: string, script: string): Promise<WorkerRoute[]> {
    return this.routes(this.pg, "WHERE account_id = $1 AND script = $2", [accountId, script]);
  }

  allRoutes(): Promise<WorkerRoute[]> {
    return this.routes(this.pg, "", []);
  }

  private async insertRoute(tx: Transaction, r: WorkerRoute): Promise<void> {
    try {
      await tx.execute("INSERT INTO worker_routes.routes (id, zone_id, account_id, pattern, script, created_on) VALUES ($1, $2, $3, $4, $5, $6)", [
        r.id,
        r.zoneId,
        r.accountId,
        r.pattern,
        r.script,
        new Date().toISOString(),
      ]);
    } catch (err) {
      throw isUniqueViolation(err) ? RoutesErrors.duplicateRoute(r.pattern) : err;
    }
  }

  async addRoute(route: WorkerRoute): Promise<void> {
    await this.write((tx) => this.insertRoute(tx, route));
  }

  async updateRoute(route: WorkerRoute): Promise<boolean> {
    try {
      return await this.write(
        async (tx) =>
          (await tx.execute("UPDATE worker_routes.routes SET pattern = $1, script = $2 WHERE id = $3 AND zone_id = $4", [
            route.pattern,
            route.script,
            route.id,
            route.zoneId,
          ])) > 0,
      );
    } catch (err) {
      throw isUniqueViolation(err) ? RoutesErrors.duplicateRoute(route.pattern) : err;
    }
  }

  deleteRoute(zoneId: string, id: string): Promise<boolean> {
    return this.write(async (tx) => (await tx.execute("DELETE FROM worker_routes.routes WHERE zone_id = $1 AND id = $2", [zoneId, id])) > 0);
  }

  async replaceScriptRoutes(accountId: string, script: string, routes: readonly WorkerRoute[]): Promise<void> {
    await this.write(async (tx) => {
      await tx.execute("DELETE FROM worker_routes.routes WHERE account_id = $1 AND script = $2", [accountId, script]);
      for (const r of routes) await this.insertRoute(tx, r);
    });
  }

  private async domainRows(on: SqlRunner, where: string, params: unknown[]): Promise<CustomDomain[]> {
    return (await on.rows<DomainRow>(`SELECT ${DOMAIN_COLUMNS} FROM worker_routes.domains ${where} ORDER BY hostname`, params)).map(toDomain);
  }

  domains(accountId: string): Promise<CustomDomain[]> {
    return this.domainRows(this.pg, "WHERE account_id = $1", [accountId]);
  }

  allDomains(): Promise<CustomDomain[]> {
    return this.domainRows(this.pg, "", []);
  }

  async domainByHostname(hostname: string): Promise<CustomDomain | undefined> {
    return (await this.domainRows(this.pg, "WHERE hostname = $1", [hostname]))[0];
  }

  putDomain(d: CustomDomain, override: boolean): Promise<CustomDomain> {
    return this.write(async (tx) => {
      // Two attaches of one new hostname at once: the second waits on the first's row, then finds it.
      await tx.execute(
        `INSERT INTO worker_routes.domains (id, account_id, zone_id, zone_name, hostname, service, environment) VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (hostname) DO NOTHING`,
        [d.id, d.accountId, d.zoneId, d.zoneName, d.hostname, d.service, d.environment],
      );
      const oldRow = await tx.row<DomainRow>(`SELECT ${DOMAIN_COLUMNS} FROM worker_routes.domains WHERE hostname = $1 FOR UPDATE`, [d.hostname]);
      const old = toDomain(oldRow!);
      if (old.id === d.id) return d;
      // A hostname never moves across accounts, override or not (its zone is checked to be the caller's first).
      if (old.accountId !== d.accountId || (old.service !== d.service && !override)) throw RoutesErrors.domainTaken(d.hostname, old.service);
      await tx.execute("UPDATE worker_routes.domains SET service = $1, environment = $2, zone_id = $3, zone_name = $4 WHERE id = $5", [
        d.service,
        d.environment,
        d.zoneId,
        d.zoneName,
        old.id,
      ]);
      return { ...d, id: old.id };
    });
  }

  deleteDomain(accountId: string, id: string): Promise<boolean> {
    return this.write(async (tx) => (await tx.execute("DELETE FROM worker_routes.domains WHERE account_id = $1 AND id = $2", [accountId, id])) > 0);
  }

  async deleteZone(zoneId: string): Promise<void> {
    await this.write(async (tx) => {
      await tx.execute("DELETE FROM worker_routes.routes WHERE zone_id = $1", [zoneId]);
      await tx.execute("DELETE FROM worker_routes.domains WHERE zone_id = $1", [zoneId]);
    });
  }

  async deleteScript(accountId: string, script: string): Promise<void> {
    await this.write(async (tx) => {
      await tx.execute("DELETE FROM worker_routes.routes WHERE account_id = $1 AND script = $2", [accountId, script]);
      await tx.execute("DELETE FROM worker_routes.domains WHERE account_id = $1 AND service = $2", [accountId, script]);
      await tx.execute("DELETE FROM worker_routes.workers_dev_off WHERE account_id = $1 AND script = $2", [accountId, script]);
    });
  }

  async setWorkersDev(accountId: string, script: string, enabled: boolean): Promise<void> {
    await this.write((tx) =>
      tx.execute(
        enabled
          ? "DELETE FROM worker_routes.workers_dev_off WHERE account_id = $1 AND script = $2"
          : "INSERT INTO worker_routes.workers_dev_off (account_id, script) VALUES ($1, $2) ON CONFLICT DO NOTHING",
        [accountId, script],
      ),
    );
  }

  async workersDevOff(): Promise<{ accountId: string; script: string }[]> {
    const rows = await this.pg.rows<{ account_id: string; script: string }>(
      "SELECT account_id, script FROM worker_routes.workers_dev_off ORDER BY account_id, script",
    );
    return rows.map((r) => ({ accountId: r.account_id, script: r.script }));
  }
}
