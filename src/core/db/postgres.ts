import pg from "pg";
import { markDependency } from "../errors/dependency.js";

/** Anything a query can run on: the pool (one statement, auto-commit) or the client of a transaction. */
type Queryable = Pick<pg.Pool, "query">;

export interface PostgresOptions {
  url: string;
  /** Connections this node keeps at most. */
  poolSize: number;
  /**
   * Opening a connection, or waiting for a free one of the pool, fails after this long (a 503, not a hang). 5 s by
   * default: a stopped server refuses at once, so this only bounds a server that does not answer, and 2 s was short
   * enough for a burst on a loaded machine to turn a wait for a free connection into 503s.
   */
  connectTimeoutMs?: number;
  /** PostgreSQL cancels a statement running longer than this. */
  statementTimeoutMs?: number;
  /** Shown in pg_stat_activity: which node holds a connection. */
  applicationName?: string;
  /** Where errors of idle connections go (the server restarting closes them: the pool opens new ones). */
  onIdleError?: (err: Error) => void;
}

/** SQLSTATEs after which a transaction is run again: serialization_failure and deadlock_detected. */
const RETRIED = new Set(["40001", "40P01"]);
const MAX_ATTEMPTS = 5;

/**
 * A statement of the hot path, prepared once per connection under its name and then only bound and executed: the
 * server parses and plans it once instead of on every request. Names must be unique in the process (`area.what`).
 */
export interface NamedStatement {
  readonly name: string;
  readonly text: string;
}

export function namedStatement(name: string, text: string): NamedStatement {
  return { name, text };
}

type Sql = string | NamedStatement;
const queryOf = (sql: Sql, params: readonly unknown[]) =>
  typeof sql === "string" ? { text: sql, values: params as unknown[] } : { name: sql.name, text: sql.text, values: params as unknown[] };

/** Typed query helpers over one connection or the pool; each error passes on marked as PostgreSQL's. */
export class SqlRunner {
  constructor(protected readonly on: Queryable) {}

  /** The rows of `sql` with `$1..$n` bound to `params`. */
  async rows<R extends object>(sql: Sql, params: readonly unknown[] = []): Promise<R[]> {
    try {
      return (await this.on.query<R>(queryOf(sql, params))).rows;
    } catch (err) {
      throw markDependency(err, "PostgreSQL");
    }
  }

  /** The first row, or undefined. */
  async row<R extends object>(sql: Sql, params: readonly unknown[] = []): Promise<R | undefined> {
    return (await this.rows<R>(sql, params))[0];
  }

  /** Runs a statement; returns how many rows it changed. */
  async execute(sql: Sql, params: readonly unknown[] = []): Promise<number> {
    try {
      return (await this.on.query(queryOf(sql, params))).rowCount ?? 0;
    } catch (err) {
      throw markDependency(err, "PostgreSQL");
    }
  }
}

/** The statements of one transaction (all on one connection). */
export class Transaction extends SqlRunner {}

/**
 * A node's connection pool to PostgreSQL (`--database-url`, `--database-pool-size`). Statements outside
 * `withTransaction` run alone, each committed on its own. Timeouts are short so that a request fails fast with a
 * 503 when PostgreSQL is away, and the pool reconnects by itself when it is back.
 */
export class Postgres extends SqlRunner {
  readonly pool: pg.Pool;
  /** Where the database is, without credentials: for banners and logs. */
  readonly location: string;

  constructor(opts: PostgresOptions) {
    const pool = new pg.Pool({
      connectionString: opts.url,
      max: opts.poolSize,
      connectionTimeoutMillis: opts.connectTimeoutMs ?? 5_000,
      statement_timeout: opts.statementTimeoutMs ?? 15_000,
      // A server that vanished without closing the socket: give up on the statement a little after PostgreSQL would.
      query_timeout: (opts.statementTimeoutMs ?? 15_000) + 5_000,
      idleTimeoutMillis: 30_000,
      keepAlive: true,
      application_name: opts.applicationName ?? "edge-platform",
    });
    super(pool);
    this.pool = pool;
    // Without a listener an idle connection closed by the server (a restart) would crash the process.
    pool.on("error", (err) => opts.onIdleError?.(err));
    this.location = describeDatabaseUrl(opts.url);
  }

  /**
   * Runs `fn` in one transaction on one connection: committed when it resolves, rolled back when it throws. A
   * serialization failure or a deadlock runs it again (up to 5 times, after a short random pause), so `fn` must
   * have no effect outside the transaction before it resolves.
   */
  async withTransaction<T>(fn: (tx: Transaction) => Promise<T>, opts: { isolation?: "read committed" | "repeatable read" | "serializable" } = {}): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const client = await this.checkout();
      let broken = false;
      // The server ending the connection between two statements is reported by the next one (or the COMMIT);
      // unheard, the client's 'error' event would end the process.
      const ignore = () => (broken = true);
      client.on("error", ignore);
      try {
        await client.query(`BEGIN ISOLATION LEVEL ${(opts.isolation ?? "read committed").toUpperCase()}`);
        const result = await fn(new Transaction(client));
        await client.query("COMMIT");
        return result;
      } catch (err) {
        await client.query("ROLLBACK").catch(() => (broken = true));
        const code = (err as { code?: string }).code;
        if (attempt < MAX_ATTEMPTS && code !== undefined && RETRIED.has(code)) {
          await new Promise((resolve) => setTimeout(resolve, Math.random() * 20 * attempt));
          continue;
        }
        throw markDependency(err, "PostgreSQL");
      } finally {
        // A connection whose rollback failed is in an unknown state: the pool drops it instead of reusing it.
        client.off("error", ignore);
        client.release(broken || undefined);
      }
    }
  }

  /** One connection for the caller alone (LISTEN, session-level locks); release it when done. */
  async checkout(): Promise<pg.PoolClient> {
    try {
      return await this.pool.connect();
    } catch (err) {
      throw markDependency(err, "PostgreSQL");
    }
  }

  /**
   * Runs `fn` while holding a session-level advisory lock (`key`, a number no one else uses), whichever node asks:
   * one at a time across the cluster. Holds one connection of the pool meanwhile; `fn` uses others.
   */
  async withAdvisoryLock<T>(key: bigint, fn: () => Promise<T>): Promise<T> {
    const client = await this.checkout();
    let broken = false;
    const onError = () => (broken = true);
    client.on("error", onError);
    try {
      await client.query("SELECT pg_advisory_lock($1)", [key.toString()]).catch((err: unknown) => {
        throw markDependency(err, "PostgreSQL");
      });
      try {
        return await fn();
      } finally {
        await client.query("SELECT pg_advisory_unlock($1)", [key.toString()]).catch(() => (broken = true));
      }
    } finally {
      client.off("error", onError);
      // A connection that may still hold the lock is closed, which releases it.
      client.release(broken || undefined);
    }
  }

  /** Resolves when PostgreSQL answers a trivial query (for /healthz). */
  async ping(): Promise<void> {
    await this.execute("SELECT 1");
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

/** `postgres://user@host:port/db` with the password left out (never printed). */
export function describeDatabaseUrl(url: string): string {
  try {
    const u = new URL(url);
    const user = u.username ? `${decodeURIComponent(u.username)}@` : "";
    return `postgres://${user}${u.host}${u.pathname}`;
  } catch {
    return "postgres://(unparsable URL)";
  }
}
