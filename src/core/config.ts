import type { OptionSpec, OptionValues } from "./cli/command.js";
import { UserError } from "./errors.js";

/**
 * Core's part of `edgecli serve`: the options it declares (defaults live only here) and the typed settings read
 * from them. Every area has the same pair in its config.ts; core is the example.
 */
export const serveOptions = {
  host: { type: "string", describe: "Address of the edge HTTP port (API, AI gateway, workers)", default: "127.0.0.1" },
  port: { type: "number", describe: "Edge HTTP port; 0 picks a free one", default: 8787 },
  "state-dir": { type: "string", describe: "Where the platform keeps its state (env EDGE_STATE_DIR; default .edge/)" },
  "log-level": {
    type: "string",
    describe: "Log level",
    choices: ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const,
    default: "info",
  },
  "body-limit": { type: "number", describe: "Largest JSON request body in bytes (routes with raw bodies set their own)", default: 10 * 1024 * 1024 },
  "body-idle-timeout": {
    type: "number",
    describe: "Seconds a request body may stop arriving before the connection is closed (a client trickling nothing would hold it forever)",
    default: 60,
  },
  "platform-config": { type: "string", describe: "TOML file whose keys are these option names (default <state-dir>/platform.toml when present)" },
  "seal-object-prototype": {
    type: "boolean",
    describe:
      "Once started, seal Object.prototype (no property can be added to it), so a prototype-pollution bug fails its request instead of changing every object (false turns it off)",
    default: true,
  },
  "database-url": {
    type: "string",
    describe:
      "PostgreSQL for every area's rows instead of SQLite files in the state directory, e.g. postgres://edge:PASSWORD@db:5432/edge (env EDGE_DATABASE_URL; needs EDGE_SECRETS_KEY)",
  },
  "object-store-url": {
    type: "string",
    describe:
      "An S3-compatible bucket for bodies (R2 objects, large KV values) instead of files in the state directory: s3://BUCKET?endpoint=URL&region=R, path-style; credentials from the AWS SDK's chain (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, profiles) (env EDGE_OBJECT_STORE_URL)",
  },
  "database-pool-size": { type: "number", describe: "Connections this node keeps open to PostgreSQL (with --database-url)", default: 10 },
} satisfies Record<string, OptionSpec>;

/** Core's settings, after flags, the platform config file and defaults are merged. */
export interface CoreConfig {
  host: string;
  port: number;
  logLevel: OptionValues<typeof serveOptions>["log-level"];
  /** Largest request body (bytes) a v4 route accepts unless it sets its own limit. */
  bodyLimit: number;
  /** Milliseconds a request body may stop arriving before its connection is closed. */
  bodyIdleMs: number;
  sealObjectPrototype: boolean;
  /** PostgreSQL's URL when rows live there; undefined in the embedded default (SQLite). */
  databaseUrl?: string;
  databasePoolSize: number;
  /** The bucket bodies live in; undefined in the embedded default (files). */
  objectStore?: ObjectStoreLocation;
}

/** Where `--object-store-url` points: one bucket, addressed path-style. */
export interface ObjectStoreLocation {
  bucket: string;
  /** The S3 endpoint (e.g. http://rgw:7480); undefined means AWS S3 itself. */
  endpoint?: string;
  region: string;
}

/** The environment variables that set the two backend options when no flag does (they override platform.toml). */
export const BACKEND_ENV = { "database-url": "EDGE_DATABASE_URL", "object-store-url": "EDGE_OBJECT_STORE_URL" } as const;

const BUCKET_RE = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/** Checks `--database-url`: a postgres:// URL (the password stays in it; it is never printed). */
export function parseDatabaseUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UserError(`--database-url must be a URL like postgres://USER:PASSWORD@HOST:5432/DATABASE; got something else`);
  }
  if (url.protocol !== "postgres:" && url.protocol !== "postgresql:") {
    throw new UserError(`--database-url must start with postgres:// (or postgresql://); it starts with ${url.protocol}//`);
  }
  return value;
}

/** Parses `s3://BUCKET?endpoint=URL&region=R`; anything else is refused with what to write instead. */
export function parseObjectStoreUrl(value: string): ObjectStoreLocation {
  const example = "s3://BUCKET?endpoint=http://HOST:PORT&region=us-east-1";
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UserError(`--object-store-url must look like ${example}`);
  }
  if (url.protocol !== "s3:") throw new UserError(`--object-store-url must start with s3:// (${example}); it starts with ${url.protocol}//`);
  const bucket = url.hostname;
  if (!BUCKET_RE.test(bucket)) throw new UserError(`--object-store-url: "${bucket}" is not a bucket name (3-63 lowercase letters, digits, dots, hyphens)`);
  if (url.pathname !== "" && url.pathname !== "/") throw new UserError(`--object-store-url names a bucket, not a path in it (${example})`);
  for (const key of url.searchParams.keys()) {
    if (key !== "endpoint" && key !== "region") throw new UserError(`--object-store-url: unknown parameter "${key}" (only endpoint and region)`);
  }
  const endpoint = url.searchParams.get("endpoint") ?? undefined;
  if (endpoint !== undefined) {
    let parsed: URL | undefined;
    try {
      parsed = new URL(endpoint);
    } catch {
      parsed = undefined;
    }
    if (!parsed || (parsed.protocol !== "http:" && parsed.protocol !== "https:")) {
      throw new UserError(`--object-store-url: endpoint must be an http:// or https:// URL (${example})`);
    }
  }
  return { bucket, endpoint, region: url.searchParams.get("region") || "us-east-1" };
}

export function readCoreConfig(options: OptionValues<typeof serveOptions>): CoreConfig {
  return {
    host: options.host,
    port: options.port,
    logLevel: options["log-level"],
    bodyLimit: options["body-limit"],
    bodyIdleMs: positiveSeconds("--body-idle-timeout", options["body-idle-timeout"]) * 1000,
    sealObjectPrototype: options["seal-object-prototype"],
    databaseUrl: options["database-url"] === undefined ? undefined : parseDatabaseUrl(options["database-url"]),
    databasePoolSize: positivePoolSize(options["database-pool-size"]),
    objectStore: options["object-store-url"] === undefined ? undefined : parseObjectStoreUrl(options["object-store-url"]),
  };
}

function positiveSeconds(flag: string, n: number): number {
  if (!Number.isFinite(n) || n <= 0 || n > 86_400) throw new UserError(`${flag} must be a number of seconds from 0 (exclusive) to 86400; got ${n}`);
  return n;
}

function positivePoolSize(n: number): number {
  // Two at least: start-up holds one for a cluster-wide lock while the work under it uses another.
  if (!Number.isInteger(n) || n < 2 || n > 1000) throw new UserError(`--database-pool-size must be a whole number from 2 to 1000; got ${n}`);
  return n;
}
