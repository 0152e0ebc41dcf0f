import { BlockList, isIP } from "node:net";
import type { OptionSpec, OptionValues } from "./cli/command.js";
import type { ConnectionLimitSettings } from "./http/connection-limits.js";
import { UserError } from "./errors.js";

/**
 * Core's part of `edgecli serve`: the options it declares (defaults live only here) and the typed settings read
 * from them. Every area has the same pair in its config.ts; core is the example.
 */
export const serveOptions = {
  host: { type: "string", describe: "Address of the edge HTTP port (API, AI gateway, Workers, proxied sites)", default: "127.0.0.1" },
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
    describe:
      "Seconds a request body may stop arriving before it is refused (408) and its connection closed (a client trickling nothing would hold it forever); also the window --body-min-rate is measured over",
    default: 60,
  },
  "body-min-rate": {
    type: "number",
    describe:
      "Bytes a second a request body must bring on average over each --body-idle-timeout window, or it is refused (408): a byte a minute would otherwise hold a connection forever; 0 turns the floor off",
    // Apache httpd's mod_reqtimeout default (MinRate=500): 4 kbit/s, below any link that carries HTTP uploads.
    default: 500,
  },
  "request-head-timeout": {
    type: "number",
    describe: "Seconds a request head (request line and headers) may take to arrive, however it trickles in, before it is refused (408)",
    // Past the 65 s keep-alive, as Node advises (a load balancer reusing a connection must not race the close).
    default: 66,
  },
  "edge-max-connections": {
    type: "number",
    describe:
      "Connections the edge port carries at once, from all clients (a WebSocket counts as one; the HTTPS port's count too, from accept); more are answered 503 and closed. Keep it under the process's file limit (ulimit -n): a WebSocket to a Worker holds a second descriptor",
    // Above --websockets-max (10,000) with room for HTTP; 16,384 connections with a WebSocket each need about
    // 26,000 descriptors, which the usual service limit (LimitNOFILE 524,288; ulimit -n 1,024 in a login shell) sets.
    default: 16_384,
  },
  "edge-max-connections-per-client": {
    type: "number",
    describe:
      "Connections one client carries at once on the edge port and the HTTPS port together (an IPv4 address, or an IPv6 /64; the TCP peer, X-Forwarded-For is not read); more are answered 429 and closed",
    // Chromium's pool holds at most 256 sockets a profile and 6 a host: room for 40 browsers behind one NAT, far
    // short of the node's limit, so one address cannot take the node.
    default: 256,
  },
  "edge-max-connections-per-client-exempt": {
    type: "strings",
    describe:
      "Addresses or CIDR ranges the per-client limit does not apply to: a reverse proxy in front carries many clients on its own address (repeatable; default loopback)",
    default: ["127.0.0.0/8", "::1"],
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
  "metrics-host": {
    type: "string",
    describe: "Address of the Prometheus metrics listener (GET /metrics); loopback unless the operator opens it",
    default: "127.0.0.1",
  },
  "metrics-port": {
    type: "number",
    describe: "Port of the Prometheus metrics listener; 0 turns it off",
    // The port OpenTelemetry's Prometheus exporter uses: free on most machines, and a scrape config's usual guess.
    default: 9464,
  },
} satisfies Record<string, OptionSpec>;

/** Core's settings, after flags, the platform config file and defaults are merged. */
export interface CoreConfig {
  host: string;
  port: number;
  logLevel: OptionValues<typeof serveOptions>["log-level"];
  /** Largest request body (bytes) a v4 route accepts unless it sets its own limit. */
  bodyLimit: number;
  /** Milliseconds a request body may stop arriving before it is refused; the window of the rate floor. */
  bodyIdleMs: number;
  /** Bytes a second a request body must bring over each window; 0: no floor. */
  bodyMinBytesPerSecond: number;
  /** Milliseconds a request head may take to arrive. */
  headTimeoutMs: number;
  connections: ConnectionLimitSettings;
  sealObjectPrototype: boolean;
  /** PostgreSQL's URL when rows live there; undefined in the embedded default (SQLite). */
  databaseUrl?: string;
  databasePoolSize: number;
  /** The bucket bodies live in; undefined in the embedded default (files). */
  objectStore?: ObjectStoreLocation;
  /** Where GET /metrics listens; undefined when turned off (--metrics-port 0). */
  metrics?: { host: string; port: number };
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
    bodyMinBytesPerSecond: bytesPerSecond("--body-min-rate", options["body-min-rate"]),
    headTimeoutMs: positiveSeconds("--request-head-timeout", options["request-head-timeout"]) * 1000,
    connections: {
      max: connectionCount("--edge-max-connections", options["edge-max-connections"]),
      perClientMax: connectionCount("--edge-max-connections-per-client", options["edge-max-connections-per-client"]),
      perClientExempt: addressRanges("--edge-max-connections-per-client-exempt", options["edge-max-connections-per-client-exempt"]),
    },
    sealObjectPrototype: options["seal-object-prototype"],
    databaseUrl: options["database-url"] === undefined ? undefined : parseDatabaseUrl(options["database-url"]),
    databasePoolSize: positivePoolSize(options["database-pool-size"]),
    objectStore: options["object-store-url"] === undefined ? undefined : parseObjectStoreUrl(options["object-store-url"]),
    metrics: metricsAddress(options["metrics-host"], options["metrics-port"]),
  };
}

function metricsAddress(host: string, port: number): CoreConfig["metrics"] {
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UserError(`--metrics-port must be a port from 1 to 65535, or 0 for none; got ${port}`);
  if (port === 0) return undefined;
  if (isIP(host) === 0 && host !== "localhost") throw new UserError(`--metrics-host must be an IP address; got ${host}`);
  return { host, port };
}

function positiveSeconds(flag: string, n: number): number {
  if (!Number.isFinite(n) || n <= 0 || n > 86_400) throw new UserError(`${flag} must be a number of seconds from 0 (exclusive) to 86400; got ${n}`);
  return n;
}

function bytesPerSecond(flag: string, n: number): number {
  if (!Number.isInteger(n) || n < 0 || n > 1024 ** 3)
    throw new UserError(`${flag} must be a whole number of bytes a second from 0 (no floor) to 1073741824; got ${n}`);
  return n;
}

function connectionCount(flag: string, n: number): number {
  if (!Number.isInteger(n) || n < 1 || n > 1_000_000) throw new UserError(`${flag} must be a whole number from 1 to 1000000; got ${n}`);
  return n;
}

/** Addresses and CIDR ranges, repeated or as comma lists ("none" for no range at all). */
function addressRanges(flag: string, values: readonly string[]): BlockList {
  const ranges = new BlockList();
  for (const value of values.flatMap((v) => v.split(",")).map((v) => v.trim())) {
    if (value === "" || value === "none") continue;
    const [address, bits] = value.split("/");
    const family = isIP(address);
    const prefix = bits === undefined ? (family === 4 ? 32 : 128) : Number(bits);
    if (!family || !Number.isInteger(prefix) || prefix < 0 || prefix > (family === 4 ? 32 : 128) || (bits !== undefined && !/^\d+$/.test(bits))) {
      throw new UserError(`${flag}: "${value}" is not an IP address or CIDR range (like 10.0.0.0/8 or 2001:db8::/32)`);
    }
    ranges.addSubnet(address, prefix, family === 4 ? "ipv4" : "ipv6");
  }
  return ranges;
}

function positivePoolSize(n: number): number {
  // Two at least: start-up holds one for a cluster-wide lock while the work under it uses another.
  if (!Number.isInteger(n) || n < 2 || n > 1000) throw new UserError(`--database-pool-size must be a whole number from 2 to 1000; got ${n}`);
  return n;
}
