import type { Bus } from "../../core/cluster/bus.js";
import type { Postgres } from "../../core/db/postgres.js";
import { CERTIFICATE_COLUMNS, customParams, toCertificate, toCustomCertificate, type CertificateDbRow, type CustomCertificateDbRow } from "./rows.js";
import { certificateSql, replaceParams } from "./sql.js";
import type { CertificateRow, CertificateStore, CustomCertificateRow } from "./store.js";

export const CERTIFICATES_AREA = "worker_certificates";
/** The notice every change sends: the nodes read the certificates they serve again. */
export const CERTIFICATES_CHANGED = "certificates";

/** `?` placeholders as PostgreSQL's `$1..$n`. */
const numbered = (sql: string) => {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
};
const TABLE = `${CERTIFICATES_AREA}.certificates`;
const SQL = Object.fromEntries(
  Object.entries(certificateSql(TABLE, `${CERTIFICATES_AREA}.acme_accounts`, `${CERTIFICATES_AREA}.custom_certificates`)).map(([k, v]) => [k, numbered(v)]),
) as ReturnType<typeof certificateSql>;

/**
 * CertificateStore on PostgreSQL (schema `worker_certificates`). A change that issues or removes a certificate
 * announces `certificates` inside its transaction, so every node serves it (or stops) from its notice.
 */
export class PgCertificateStore implements CertificateStore {
  constructor(
    private readonly pg: Postgres,
    private readonly bus: Bus,
  ) {}

  private announced(sql: string, params: unknown[]): Promise<boolean> {
    return this.pg.withTransaction(async (tx) => {
      const changed = (await tx.execute(sql, params)) >= 1;
      if (changed) await this.bus.publish(CERTIFICATES_AREA, CERTIFICATES_CHANGED, tx);
      return changed;
    });
  }

  async all(): Promise<CertificateRow[]> {
    const rows = await this.pg.rows<CertificateDbRow>(`SELECT ${CERTIFICATE_COLUMNS} FROM ${TABLE} ORDER BY hostname`);
    return rows.map(toCertificate);
  }

  async ensure(hostname: string, accountId: string, now: number): Promise<void> {
    await this.pg.execute(SQL.ensure, [hostname, accountId, now]);
  }

  async claim(hostname: string, node: string, now: number, leaseMs: number): Promise<boolean> {
    // One statement: of two nodes claiming at once, the second waits for the first's row lock, then sees its claim.
    return (await this.pg.execute(SQL.claim, [node, now + leaseMs, hostname, now, now])) === 1;
  }

  issued(hostname: string, node: string, c: { certPem: string; keySealed: string; notAfter: number; nextAttemptAt: number }): Promise<boolean> {
    return this.announced(SQL.issued, [c.certPem, c.keySealed, c.notAfter, c.nextAttemptAt, hostname, node]);
  }

  async failed(hostname: string, node: string, f: { error: string; nextAttemptAt: number }): Promise<boolean> {
    return (await this.pg.execute(SQL.failed, [f.error, f.nextAttemptAt, hostname, node])) === 1;
  }

  delete(hostname: string): Promise<boolean> {
    return this.announced(SQL.delete, [hostname]);
  }

  async accountKey(directoryUrl: string): Promise<string | undefined> {
    return (await this.pg.row<{ key_sealed: string }>(SQL.accountKey, [directoryUrl]))?.key_sealed;
  }

  async saveAccountKey(directoryUrl: string, keySealed: string): Promise<string> {
    await this.pg.execute(SQL.saveAccountKey, [directoryUrl, keySealed]);
    return (await this.accountKey(directoryUrl))!;
  }

  async customCertificates(): Promise<CustomCertificateRow[]> {
    return (await this.pg.rows<CustomCertificateDbRow>(SQL.customAll)).map(toCustomCertificate);
  }

  addCustomCertificate(row: CustomCertificateRow, max: number): Promise<boolean> {
    // Under a lock on the zone's uploads: two at once cannot both pass the cap (READ COMMITTED counts rows committed).
    return this.pg.withTransaction(async (tx) => {
      await tx.execute("SELECT pg_advisory_xact_lock(hashtext($1))", [`custom-certificates:${row.zoneId}`]);
      const added = (await tx.execute(SQL.addCustom, [...customParams(row), row.zoneId, max])) === 1;
      if (added) await this.bus.publish(CERTIFICATES_AREA, CERTIFICATES_CHANGED, tx);
      return added;
    });
  }

  replaceCustomCertificate(row: CustomCertificateRow): Promise<boolean> {
    return this.announced(SQL.replaceCustom, replaceParams(row));
  }

  deleteCustomCertificate(zoneId: string, id: string): Promise<boolean> {
    return this.announced(SQL.deleteCustom, [zoneId, id]);
  }

  async deleteZoneCustomCertificates(zoneId: string): Promise<number> {
    return this.pg.withTransaction(async (tx) => {
      const n = await tx.execute(SQL.deleteZoneCustom, [zoneId]);
      if (n > 0) await this.bus.publish(CERTIFICATES_AREA, CERTIFICATES_CHANGED, tx);
      return n;
    });
  }
}
