import type { Db } from "../../core/db/sqlite.js";
import { CERTIFICATE_COLUMNS, customParams, toCertificate, toCustomCertificate, type CertificateDbRow, type CustomCertificateDbRow } from "./rows.js";
import { certificateSql, replaceParams } from "./sql.js";
import type { CertificateRow, CertificateStore, CustomCertificateRow } from "./store.js";

/** CertificateStore on SQLite (`<state>/db/worker-certificates.sqlite`). */
export class SqliteCertificateStore implements CertificateStore {
  private readonly q;

  constructor(db: Db) {
    const CERTIFICATE_SQL = certificateSql("certificates", "acme_accounts", "custom_certificates");
    this.q = {
      all: db.prepare<[], CertificateDbRow>(`SELECT ${CERTIFICATE_COLUMNS} FROM certificates ORDER BY hostname`),
      ensure: db.prepare<[string, string, number]>(CERTIFICATE_SQL.ensure),
      claim: db.prepare<[string, number, string, number, number]>(CERTIFICATE_SQL.claim),
      issued: db.prepare<[string, string, number, number, string, string]>(CERTIFICATE_SQL.issued),
      failed: db.prepare<[string, number, string, string]>(CERTIFICATE_SQL.failed),
      delete: db.prepare<[string]>(CERTIFICATE_SQL.delete),
      accountKey: db.prepare<[string], { key_sealed: string }>(CERTIFICATE_SQL.accountKey),
      saveAccountKey: db.prepare<[string, string]>(CERTIFICATE_SQL.saveAccountKey),
      customAll: db.prepare<[], CustomCertificateDbRow>(CERTIFICATE_SQL.customAll),
      addCustom: db.prepare<unknown[]>(CERTIFICATE_SQL.addCustom),
      replaceCustom: db.prepare<unknown[]>(CERTIFICATE_SQL.replaceCustom),
      deleteCustom: db.prepare<[string, string]>(CERTIFICATE_SQL.deleteCustom),
      deleteZoneCustom: db.prepare<[string]>(CERTIFICATE_SQL.deleteZoneCustom),
    };
  }

  async all(): Promise<CertificateRow[]> {
    return this.q.all.all().map(toCertificate);
  }

  async ensure(hostname: string, accountId: string, now: number): Promise<void> {
    this.q.ensure.run(hostname, accountId, now);
  }

  async claim(hostname: string, node: string, now: number, leaseMs: number): Promise<boolean> {
    return this.q.claim.run(node, now + leaseMs, hostname, now, now).changes === 1;
  }

  async issued(hostname: string, node: string, c: { certPem: string; keySealed: string; notAfter: number; nextAttemptAt: number }): Promise<boolean> {
    return this.q.issued.run(c.certPem, c.keySealed, c.notAfter, c.nextAttemptAt, hostname, node).changes === 1;
  }

  async failed(hostname: string, node: string, f: { error: string; nextAttemptAt: number }): Promise<boolean> {
    return this.q.failed.run(f.error, f.nextAttemptAt, hostname, node).changes === 1;
  }

  async delete(hostname: string): Promise<boolean> {
    return this.q.delete.run(hostname).changes === 1;
  }

  async accountKey(directoryUrl: string): Promise<string | undefined> {
    return this.q.accountKey.get(directoryUrl)?.key_sealed;
  }

  async saveAccountKey(directoryUrl: string, keySealed: string): Promise<string> {
    this.q.saveAccountKey.run(directoryUrl, keySealed);
    return this.q.accountKey.get(directoryUrl)!.key_sealed;
  }

  async customCertificates(): Promise<CustomCertificateRow[]> {
    return this.q.customAll.all().map(toCustomCertificate);
  }

  async addCustomCertificate(row: CustomCertificateRow, max: number): Promise<boolean> {
    return this.q.addCustom.run(...customParams(row), row.zoneId, max).changes === 1;
  }

  async replaceCustomCertificate(row: CustomCertificateRow): Promise<boolean> {
    return this.q.replaceCustom.run(...replaceParams(row)).changes === 1;
  }

  async deleteCustomCertificate(zoneId: string, id: string): Promise<boolean> {
    return this.q.deleteCustom.run(zoneId, id).changes === 1;
  }

  async deleteZoneCustomCertificates(zoneId: string): Promise<number> {
    return this.q.deleteZoneCustom.run(zoneId).changes;
  }
}
