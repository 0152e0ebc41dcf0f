/**
 * The registry of D1 databases: which databases each account has, by uuid and name. Their contents are SQLite files
 * of their own (engine/), not rows here; a database's file is named by its uuid, which the platform makes.
 */

/** A database as the v4 API shows it (the hosted API's fields; `num_tables` and `file_size` are added by the routes). */
export interface D1DatabaseRecord {
  uuid: string;
  name: string;
  /** ISO 8601. */
  created_at: string;
  version: "production";
}

export interface D1ListOptions {
  /** Only the database with this exact name. */
  name?: string;
  offset?: number;
  limit?: number;
}

export interface D1Store {
  /** Creates a database named `name` in the account (refused when the name is invalid or taken there). */
  createDatabase(accountId: string, name: string): Promise<D1DatabaseRecord>;
  /**
   * Records a database the `--local` CLI first sees through a config's `database_id` (as wrangler's local mode
   * does): nothing happens when the account already has it; another account's uuid or a taken name is refused.
   */
  adoptDatabase(accountId: string, uuid: string, name: string): Promise<D1DatabaseRecord>;
  /** The account's databases by name, and how many it has in all (or with that name). */
  listDatabases(accountId: string, opts?: D1ListOptions): Promise<{ databases: D1DatabaseRecord[]; total: number }>;
  /** The account's database with this uuid, if it has one. */
  getDatabase(accountId: string, uuid: string): Promise<D1DatabaseRecord | undefined>;
  /** Removes the database from the registry (its file is the engine's to remove); refused when the account has no such database. */
  deleteDatabase(accountId: string, uuid: string): Promise<void>;
}
