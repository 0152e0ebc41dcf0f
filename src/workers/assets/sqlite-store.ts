import type { Readable } from "node:stream";
import type { ContentStore } from "../../core/content/store.js";
import type { Db } from "../../core/db/sqlite.js";
import type { AssetManifest } from "./manifest.js";
import type { AssetBody, AssetsStore, BodyState, ScriptAssets, UploadSession } from "./store.js";

/** AssetsStore on the platform's SQLite (`worker-assets.sqlite`), bodies in the content store. */
export class SqliteAssetsStore implements AssetsStore {
  constructor(
    private readonly db: Db,
    private readonly content: ContentStore,
  ) {}

  async createSession(tokenHash: string, s: UploadSession): Promise<void> {
    this.db.prepare("DELETE FROM upload_sessions WHERE expires_at < ?").run(Date.now());
    this.db
      .prepare("INSERT INTO upload_sessions (token_hash, account_id, script, manifest, expires_at) VALUES (?, ?, ?, ?, ?)")
      .run(tokenHash, s.accountId, s.script, JSON.stringify(s.manifest), s.expiresAt);
  }

  async session(tokenHash: string): Promise<UploadSession | undefined> {
    const row = this.db.prepare("SELECT * FROM upload_sessions WHERE token_hash = ? AND expires_at >= ?").get(tokenHash, Date.now()) as
      { account_id: string; script: string; manifest: string; expires_at: number } | undefined;
    return row && { accountId: row.account_id, script: row.script, manifest: JSON.parse(row.manifest), expiresAt: row.expires_at };
  }

  async liveManifestChars(accountId: string): Promise<number> {
    const row = this.db
      .prepare("SELECT coalesce(sum(length(manifest)), 0) AS n FROM upload_sessions WHERE account_id = ? AND expires_at >= ?")
      .get(accountId, Date.now()) as { n: number };
    return row.n;
  }

  async bodies(accountId: string, hashes: readonly string[]): Promise<Map<string, AssetBody>> {
    const out = new Map<string, AssetBody>();
    const get = this.db.prepare("SELECT content_id, content_type, size FROM bodies WHERE account_id = ? AND hash = ?");
    for (const h of new Set(hashes)) {
      const row = get.get(accountId, h) as { content_id: string; content_type: string | null; size: number } | undefined;
      if (row) out.set(h, { contentId: row.content_id, contentType: row.content_type, size: row.size });
    }
    return out;
  }

  async putBody(accountId: string, hash: string, contentType: string | null, bytes: Buffer): Promise<void> {
    const stored = await this.content.put(bytes);
    const inserted = this.db
      .prepare("INSERT INTO bodies (account_id, hash, content_id, content_type, size) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING")
      .run(accountId, hash, stored.id, contentType, stored.size);
    if (inserted.changes === 0) await this.content.delete(stored.id);
  }

  readBody(contentId: string): Readable {
    return this.content.read(contentId);
  }

  async scriptAssets(accountId: string, script: string): Promise<ScriptAssets | undefined> {
    const row = this.db.prepare("SELECT manifest, config FROM script_assets WHERE account_id = ? AND script = ?").get(accountId, script) as
      { manifest: string; config: string } | undefined;
    return row && { manifest: JSON.parse(row.manifest), config: JSON.parse(row.config) };
  }

  async setScriptAssets(accountId: string, script: string, assets: ScriptAssets | undefined): Promise<void> {
    if (!assets) {
      this.db.prepare("DELETE FROM script_assets WHERE account_id = ? AND script = ?").run(accountId, script);
      return;
    }
    this.db
      .prepare(
        `INSERT INTO script_assets (account_id, script, manifest, config) VALUES (?, ?, ?, ?)
         ON CONFLICT (account_id, script) DO UPDATE SET manifest = excluded.manifest, config = excluded.config`,
      )
      .run(accountId, script, JSON.stringify(assets.manifest), JSON.stringify(assets.config));
  }

  async manifestsInUse(): Promise<{ accountId: string; manifest: AssetManifest }[]> {
    const rows = this.db
      .prepare("SELECT account_id, manifest FROM script_assets UNION ALL SELECT account_id, manifest FROM upload_sessions WHERE expires_at >= ?")
      .all(Date.now()) as { account_id: string; manifest: string }[];
    return rows.map((r) => ({ accountId: r.account_id, manifest: JSON.parse(r.manifest) }));
  }

  async bodyStates(): Promise<BodyState[]> {
    const rows = this.db.prepare("SELECT account_id, hash, orphaned_at FROM bodies").all() as {
      account_id: string;
      hash: string;
      orphaned_at: number | null;
    }[];
    return rows.map((r) => ({ accountId: r.account_id, hash: r.hash, orphanedAt: r.orphaned_at }));
  }

  async markOrphaned(bodies: readonly { accountId: string; hash: string }[], at: number | null): Promise<void> {
    const mark = this.db.prepare("UPDATE bodies SET orphaned_at = ? WHERE account_id = ? AND hash = ?");
    this.db.transaction(() => {
      for (const b of bodies) mark.run(at, b.accountId, b.hash);
    })();
  }

  async removeBody(accountId: string, hash: string, orphanedAt: number): Promise<boolean> {
    const row = this.db
      .prepare("DELETE FROM bodies WHERE account_id = ? AND hash = ? AND orphaned_at = ? RETURNING content_id")
      .get(accountId, hash, orphanedAt) as { content_id: string } | undefined;
    if (!row) return false;
    await this.content.delete(row.content_id);
    return true;
  }
}
