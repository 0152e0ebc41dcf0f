import type { CustomCertificateRow } from "./store.js";

/**
 * The statements both stores run (SQLite and PostgreSQL share this SQL; only the placeholders differ: `?` becomes
 * `$n` for PostgreSQL in pg-store.ts, whose table is in the area's schema), so the two backends cannot drift apart.
 */
export const certificateSql = (table: string, accounts: string, custom: string) => ({
  accountKey: `SELECT key_sealed FROM ${accounts} WHERE directory_url = ?`,
  /** The first key stored for a directory stays: of two nodes making one at once, both use the first. */
  saveAccountKey: `INSERT INTO ${accounts} (directory_url, key_sealed) VALUES (?, ?) ON CONFLICT (directory_url) DO NOTHING`,
  /** A pending row due at once; an existing row of another account starts over (its certificate is not theirs). */
  ensure: `INSERT INTO ${table} (hostname, account_id, status, failures, next_attempt_at) VALUES (?, ?, 'pending', 0, ?)
           ON CONFLICT (hostname) DO UPDATE SET account_id = excluded.account_id, status = 'pending', cert_pem = NULL,
             key_sealed = NULL, not_after = NULL, last_error = NULL, failures = 0, next_attempt_at = excluded.next_attempt_at
           WHERE certificates.account_id <> excluded.account_id`,
  /** Only a due row: a node whose view is older than another node's issue (or failure) does not order again. */
  claim: `UPDATE ${table} SET claimed_by = ?, claimed_until = ? WHERE hostname = ? AND claimed_until <= ? AND next_attempt_at <= ?`,
  issued: `UPDATE ${table} SET status = 'active', cert_pem = ?, key_sealed = ?, not_after = ?, last_error = NULL, failures = 0,
             next_attempt_at = ?, claimed_by = NULL, claimed_until = 0
           WHERE hostname = ? AND claimed_by = ?`,
  // A failed renewal keeps serving the certificate it has (still valid): the row stays active, with the error.
  failed: `UPDATE ${table} SET status = CASE WHEN cert_pem IS NULL THEN 'failed' ELSE 'active' END, last_error = ?,
             failures = failures + 1, next_attempt_at = ?, claimed_by = NULL, claimed_until = 0
           WHERE hostname = ? AND claimed_by = ?`,
  delete: `DELETE FROM ${table} WHERE hostname = ?`,
  customAll: `SELECT id, zone_id, account_id, hosts, cert_pem, key_sealed, issuer, signature, bundle_method, expires_on, uploaded_on, modified_on
              FROM ${custom} ORDER BY uploaded_on, id`,
  /** Only while the zone has fewer than the cap (the last parameter): one statement, so two uploads at once cannot pass it. */
  addCustom: `INSERT INTO ${custom} (id, zone_id, account_id, hosts, cert_pem, key_sealed, issuer, signature, bundle_method, expires_on, uploaded_on, modified_on)
              SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT)
              WHERE (SELECT COUNT(*) FROM ${custom} WHERE zone_id = ?) < CAST(? AS BIGINT)`,
  replaceCustom: `UPDATE ${custom} SET hosts = ?, cert_pem = ?, key_sealed = ?, issuer = ?, signature = ?, bundle_method = ?, expires_on = ?, modified_on = ?
                  WHERE id = ? AND zone_id = ?`,
  deleteCustom: `DELETE FROM ${custom} WHERE zone_id = ? AND id = ?`,
  deleteZoneCustom: `DELETE FROM ${custom} WHERE zone_id = ?`,
});

/** The parameters of `replaceCustom`, in their order. */
export const replaceParams = (c: CustomCertificateRow) => [
  JSON.stringify(c.hosts),
  c.certPem,
  c.keySealed,
  c.issuer,
  c.signature,
  c.bundleMethod,
  c.expiresOn,
  c.modifiedOn,
  c.id,
  c.zoneId,
];
