import type { Readable } from "node:stream";
import type { ContentStore } from "../../core/content/store.js";
import type { Postgres } from "../../core/db/postgres.js";
import type { AssetManifest } from "./manifest.js";
import type { AssetBody, AssetsStore, BodyState, ScriptAssets, UploadSession } from "./store.js";

/** The PostgreSQL schema (and content prefix) of static assets. */
export const ASSETS_AREA = "worker_assets";

/** AssetsStore on PostgreSQL (schema `worker_assets`, ASSETS_PG_MIGRATIONS), shared by every node; bodies in the content store (the bucket). */
export class PgAssetsStore implements AssetsStore {
  constructor(
    private readonly pg: Postgres,
    private readonly content: ContentStore,
  ) {}

  async createSession(tokenHash: string, s: UploadSession): Promise<void> {
    await this.pg.execute("DELETE FROM worker_assets.upload_sessions WHERE expires_at < $1", [Date.now()]);
    await this.pg.execute("INSERT INTO worker_assets.upload_sessions (token_hash, account_id, script, manifest, expires_at) VALUES ($1, $2, $3, $4, $5)", [
      tokenHash,
      s.accountId,
      s.script,
      JSON.stringify(s.manifest),
      s.expiresAt,
    ]);
  }

  async session(tokenHash: string): Promise<UploadSession | undefined> {
    const row = await this.pg.row<{ account_id: string; script: string; manifest: string; expires_at: string }>(
      "SELECT account_id, script, manifest, expires_at FROM worker_assets.upload_sessions WHERE token_hash = $1 AND expires_at >= $2",
      [tokenHash, Date.now()],
    );
    return row && { accountId: row.account_id, script: row.script, manifest: JSON.parse(row.manifest), expiresAt: Number(row.expires_at) };
  }

  async liveManifestChars(accountId: string): Promise<number> {
    const row = await this.pg.row<{ n: string }>(
      "SELECT coalesce(sum(char_length(manifest)), 0) AS n FROM worker_assets.upload_sessions WHERE account_id = $1 AND expires_at >= $2",
      [accountId, Date.now()],
    );
    return Number(row?.n ?? 0);
  }

  async bodies(accountId: string, hashes: readonly string[]): Promise<Map<string, AssetBody>> {
    const rows = await this.pg.rows<{ hash: string; content_id: string; content_type: string | null; size: string }>(
      "SELECT hash, content_id, content_type, size FROM worker_assets.bodies WHERE account_id = $1 AND hash = ANY($2::text[])",
      [accountId, [...new Set(hashes)]],
    );
    return new Map(rows.map((r) => [r.hash, { contentId: r.content_id, contentType: r.content_type, size: Number(r.size) }]));
  }

  async putBody(accountId: string, hash: string, contentType: string | null, bytes: Buffer): Promise<void> {
    const stored = await this.content.put(bytes);
    const inserted = await this.pg.execute(
      "INSERT INTO worker_assets.bodies (account_id, hash, content_id, content_type, size) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
      [accountId, hash, stored.id, contentType, stored.size],
    );
    if (inserted === 0) await this.content.delete(stored.id);
  }

  readBody(contentId: string): Readable {
    return this.content.read(contentId);
  }

  async scriptAssets(accountId: string, script: string): Promise<ScriptAssets | undefined> {
    const row = await this.pg.row<{ manifest: string; config: string }>(
      "SELECT manifest, config FROM worker_assets.script_assets WHERE account_id = $1 AND script = $2",
      [accountId, script],
    );
    return row && { manifest: JSON.parse(row.manifest), config: JSON.parse(row.config) };
  }

  async setScriptAssets(accountId: string, script: string, assets: ScriptAssets | undefined): Promise<void> {
    if (!assets) {
      await this.pg.execute("DELETE FROM worker_assets.script_assets WHERE account_id = $1 AND script = $2", [accountId, script]);
      return;
    }
    await this.pg.execute(
      `INSERT INTO worker_assets.script_assets (account_id, script, manifest, config) VALUES ($1, $2, $3, $4)
       ON CONFLICT (account_id, script) DO UPDATE SET manifest = excluded.manifest, config = excluded.config`,
      [accountId, script, JSON.stringify(assets.manifest), JSON.stringify(assets.config)],
    );
  }

  async manifestsInUse(): Promise<{ accountId: string; manifest: AssetManifest }[]> {
    const rows = await this.pg.rows<{ account_id: string; manifest: string }>(
      `SELECT account_id, manifest FROM worker_assets.script_assets
       UNION ALL SELECT account_id, manifest FROM worker_assets.upload_sessions WHERE expires_at >= $1`,
      [Date.now()],
    );
    return rows.map((r) => ({ accountId: r.account_id, manifest: JSON.parse(r.manifest) }));
  }

  async bodyStates(): Promise<BodyState[]> {
    const rows = await this.pg.rows<{ account_id: string; hash: string; orphaned_at: string | null }>(
      "SELECT account_id, hash, orphaned_at FROM worker_assets.bodies",
    );
    return rows.map((r) => ({ accountId: r.account_id, hash: r.hash, orphanedAt: r.orphaned_at === null ? null : Number(r.orphaned_at) }));
  }

  async markOrphaned(bodies: readonly { accountId: string; hash: string }[], at: number | null): Promise<void> {
    if (bodies.length === 0) return;
    await this.pg.execute(
      `UPDATE worker_assets.bodies b SET orphaned_at = $1 FROM unnest($2::text[], $3::text[]) AS u(account_id, hash)
       WHERE b.account_id = u.account_id AND b.hash = u.hash`,
      [at, bodies.map((b) => b.accountId), bodies.map((b) => b.hash)],
    );
  }

  async removeBody(accountId: string, hash: string, orphanedAt: number): Promise<boolean> {
    const row = await this.pg.row<{ content_id: string }>(
      "DELETE FROM worker_assets.bodies WHERE account_id = $1 AND hash = $2 AND orphaned_at = $3 RETURNING content_id",
      [accountId, hash, orphanedAt],
    );
    if (!row) return false;
    await this.content.delete(row.content_id);
    return true;
  }
}
