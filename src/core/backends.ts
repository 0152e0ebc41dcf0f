import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { join } from "node:path";
import type { S3Client } from "@aws-sdk/client-s3";
import { LocalBus, PostgresBus, type Bus } from "./cluster/bus.js";
import type { CoreConfig } from "./config.js";
import { FileContentStore } from "./content/file-store.js";
import type { ContentStore } from "./content/store.js";
import { migrateArea, type PgMigration } from "./db/pg-migrations.js";
import { Postgres } from "./db/postgres.js";
import { UserError } from "./errors.js";
import type { Logger } from "./logger.js";

/** Which backend keeps what, for the banner, the log and the areas' choice of store. */
export interface BackendDescription {
  /** Rows: SQLite files in the state directory, or PostgreSQL. */
  database: "sqlite" | "postgresql";
  /** Bodies: files in the state directory, or an S3-compatible bucket. */
  content: "files" | "s3";
  /** One line for people, without credentials. */
  summary: string;
}

/** The state of each dependency, for /healthz; empty in the embedded default (nothing to reach). */
export type DependencyHealth = Partial<Record<"postgres" | "object_store", "ok" | "unreachable">>;

/** What a node shares with the others (or keeps alone, embedded), opened once and handed to every service. */
export interface Backends {
  readonly description: BackendDescription;
  /** This process among the nodes: in change notices and in PostgreSQL's list of connections. */
  readonly nodeId: string;
  readonly postgres?: Postgres;
  readonly bus: Bus;
  /** The content store of one area: files under `<state>/content/<name>/`, or keys `<name>/<id>` in the bucket. */
  content(name: string): ContentStore;
  /** Registers an area's PostgreSQL migrations (run by `migrate`) and returns the pool; undefined when embedded. */
  openPostgres(area: string, migrations: readonly PgMigration[]): Postgres | undefined;
  /** Runs the migrations registered so far, each area under the cluster-wide migration lock. */
  migrate(): Promise<void>;
  health(): Promise<DependencyHealth>;
  close(): Promise<void>;
}

const CONTENT_NAME_RE = /^[a-z0-9][a-z0-9_-]{0,62}$/;
/** Health checks answer within this, whatever the dependency does. */
const HEALTH_TIMEOUT_MS = 3_000;

/** `ok` when `check` resolves in time, `unreachable` otherwise. */
async function probe(check: () => Promise<void>): Promise<"ok" | "unreachable"> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<"unreachable">((resolve) => (timer = setTimeout(() => resolve("unreachable"), HEALTH_TIMEOUT_MS)));
  try {
    return await Promise.race([
      check().then(
        () => "ok" as const,
        () => "unreachable" as const,
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Opens the backends `config` names: PostgreSQL (pool and the bus's listening connection) and the object store
 * (checking the bucket answers), or neither in the embedded default. A dependency that cannot be reached at start
 * is refused with a message saying which and where: a node does not start half-connected.
 */
export async function openBackends(config: CoreConfig, stateDir: string, log: Logger): Promise<Backends> {
  const nodeId = `${hostname().slice(0, 24)}-${randomBytes(4).toString("hex")}`;
  let postgres: Postgres | undefined;
  let bus: Bus = new LocalBus(nodeId, log);
  let s3: { client: S3Client; bucket: string; where: string; module: typeof import("./content/s3-store.js") } | undefined;
  const closers: (() => Promise<void>)[] = [];
  const close = async () => {
    for (const c of closers.reverse()) await c().catch((err: unknown) => log.warn({ err }, "closing a backend failed"));
  };
  try {
    if (config.databaseUrl) {
      const pg = new Postgres({
        url: config.databaseUrl,
        poolSize: config.databasePoolSize,
        applicationName: `edge ${nodeId}`,
        onIdleError: (err) => log.warn({ err }, "a PostgreSQL connection was closed; the pool opens another when needed"),
      });
      postgres = pg;
      closers.push(() => pg.close());
      const pgBus = new PostgresBus(pg, { url: config.databaseUrl, nodeId, log });
      closers.push(() => pgBus.close());
      try {
        await pg.ping();
        await pgBus.start();
      } catch (err) {
        throw new UserError(
          `Cannot reach PostgreSQL at ${pg.location}: ${(err as Error).message}. Check --database-url (or EDGE_DATABASE_URL) and that the server runs.`,
        );
      }
      bus = pgBus;
    }
    if (config.objectStore) {
      // Loaded only here: the AWS SDK stays off the embedded platform's start-up path.
      const module = await import("./content/s3-store.js");
      const location = config.objectStore;
      const client = module.createObjectStoreClient(location);
      closers.push(async () => client.destroy());
      const where = `s3://${location.bucket} at ${location.endpoint ?? "AWS S3"} (${location.region})`;
      try {
        await module.pingBucket(client, location.bucket);
      } catch (err) {
        const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
        const why =
          status === 404 ? "the bucket does not exist (create it first)" : status === 403 ? "access denied (check the credentials)" : (err as Error).message;
        throw new UserError(`Cannot use the object store ${where}: ${why}. Check --object-store-url (or EDGE_OBJECT_STORE_URL) and the AWS credentials.`);
      }
      s3 = { client, bucket: location.bucket, where, module };
    }
  } catch (err) {
    await close();
    throw err;
  }

  const description: BackendDescription = {
    database: postgres ? "postgresql" : "sqlite",
    content: s3 ? "s3" : "files",
    summary: [
      postgres ? `rows in PostgreSQL ${postgres.location}` : "rows in SQLite files",
      s3 ? `bodies in ${s3.where}` : "bodies in files",
      postgres || s3 ? `node ${nodeId}` : "in the state directory",
    ].join(", "),
  };
  const contents = new Map<string, ContentStore>();
  const pending: { area: string; migrations: readonly PgMigration[] }[] = [];

  return {
    description,
    nodeId,
    postgres,
    bus,
    content(name) {
      if (!CONTENT_NAME_RE.test(name)) throw new Error(`invalid content store name ${JSON.stringify(name)}`);
      let c = contents.get(name);
      if (!c) {
        c = s3 ? new s3.module.S3ContentStore(s3.client, s3.bucket, `${name}/`, log) : new FileContentStore(join(stateDir, "content", name));
        contents.set(name, c);
      }
      return c;
    },
    openPostgres(area, migrations) {
      if (!postgres) return undefined;
      pending.push({ area, migrations });
      return postgres;
    },
    async migrate() {
      while (postgres && pending.length > 0) {
        const { area, migrations } = pending.shift()!;
        const applied = await migrateArea(postgres, area, migrations);
        if (applied > 0) log.info({ area, applied }, "migrated the PostgreSQL schema");
      }
    },
    async health() {
      const health: DependencyHealth = {};
      const [pgState, s3State] = await Promise.all([postgres && probe(() => postgres.ping()), s3 && probe(() => s3.module.pingBucket(s3.client, s3.bucket))]);
      if (pgState) health.postgres = pgState;
      if (s3State) health.object_store = s3State;
      return health;
    },
    close,
  };
}
