import type { Db } from "../../core/db/sqlite.js";
import type { SecretBox } from "../../core/secret-box.js";
import type { DnssecStore, StoredKey, ZoneDnssec } from "./store.js";

interface ZoneRow {
  zone_id: string;
  status: ZoneDnssec["status"];
  enabled_on: string | null;
  modified_on: string;
}
interface KeyRow extends Omit<StoredKey, "private_key"> {
  zone_id: string;
  seq: number;
  private_key_sealed: string;
}

/** A private key is sealed to its zone and key id: a sealed value copied to another row does not open. */
export const keySealContext = (zoneId: string, keyId: string) => `dnssec key ${zoneId}/${keyId}`;

/** DnssecStore on SQLite (DNSSEC_MIGRATIONS); private keys sealed with the platform's SecretBox. */
export class SqliteDnssecStore implements DnssecStore {
  private readonly q;

  constructor(
    private readonly db: Db,
    private readonly box: SecretBox,
  ) {
    this.q = {
      zones: db.prepare("SELECT * FROM zones ORDER BY zone_id"),
      zone: db.prepare("SELECT * FROM zones WHERE zone_id = ?"),
      keys: db.prepare("SELECT * FROM keys WHERE zone_id = ? ORDER BY seq"),
      putZone: db.prepare(
        `INSERT INTO zones (zone_id, status, enabled_on, modified_on) VALUES (@zone_id, @status, @enabled_on, @modified_on)
         ON CONFLICT(zone_id) DO UPDATE SET status = excluded.status, enabled_on = excluded.enabled_on, modified_on = excluded.modified_on`,
      ),
      delKeys: db.prepare("DELETE FROM keys WHERE zone_id = ?"),
      putKey: db.prepare(
        `INSERT INTO keys (id, zone_id, seq, role, state, key_tag, public_key, private_key_sealed, created_on, state_since)
         VALUES (@id, @zone_id, @seq, @role, @state, @key_tag, @public_key, @private_key_sealed, @created_on, @state_since)`,
      ),
      delZone: db.prepare("DELETE FROM zones WHERE zone_id = ?"),
    };
  }

  async list(): Promise<ZoneDnssec[]> {
    return (this.q.zones.all() as ZoneRow[]).map((z) => this.read(z));
  }

  async get(zoneId: string): Promise<ZoneDnssec | undefined> {
    const row = this.q.zone.get(zoneId) as ZoneRow | undefined;
    return row && this.read(row);
  }

  async put(state: ZoneDnssec): Promise<void> {
    // Sealed before the transaction: a key that cannot be sealed leaves the stored state as it was.
    const keys = state.keys.map(({ private_key, ...k }, seq) => ({
      ...k,
      seq,
      zone_id: state.zone_id,
      private_key_sealed: this.box.seal(private_key, keySealContext(state.zone_id, k.id)),
    }));
    this.db.transaction(() => {
      this.q.putZone.run({ zone_id: state.zone_id, status: state.status, enabled_on: state.enabled_on, modified_on: state.modified_on });
      this.q.delKeys.run(state.zone_id);
      for (const k of keys) this.q.putKey.run(k);
    })();
  }

  async delete(zoneId: string): Promise<boolean> {
    return this.db.transaction(() => {
      this.q.delKeys.run(zoneId);
      return this.q.delZone.run(zoneId).changes > 0;
    })();
  }

  private read(z: ZoneRow): ZoneDnssec {
    const keys = (this.q.keys.all(z.zone_id) as KeyRow[]).map(({ zone_id, seq: _seq, private_key_sealed, ...k }) => ({
      ...k,
      private_key: this.box.open(private_key_sealed, keySealContext(zone_id, k.id)),
    }));
    return { zone_id: z.zone_id, status: z.status, enabled_on: z.enabled_on, modified_on: z.modified_on, keys };
  }
}
