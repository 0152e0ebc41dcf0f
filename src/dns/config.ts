import { BlockList, isIP } from "node:net";
import { availableParallelism } from "node:os";
import { UserError } from "../core/errors.js";

/** The DNS area's view of `edgecli serve` options, checked once at start. */
export interface DnsConfig {
  host: string;
  port: number;
  edgeIpv4: string[];
  edgeIpv6: string[];
  nameServers: string[];
  /** Addresses A/AAAA records may not use. */
  platformAddresses: BlockList;
  axfrAllow: BlockList;
  notifyTargets: { host: string; port: number }[];
  /** Processes answering UDP on one shared socket; 0 or 1 answers in the main process. */
  workers: number;
  tcp: TcpLimits;
}

/**
 * Limits on DNS over TCP, each an `edgecli serve` option (commands.ts builds them from this table; the defaults
 * are declared here only). Without them one client could hold a connection forever by trickling a byte at a time,
 * or hold every file descriptor the process has.
 */
export const TCP_LIMIT_OPTIONS = {
  maxClients: {
    option: "dns-tcp-max-clients",
    unit: "count",
    default: 256,
    describe: "Most DNS-over-TCP connections open at once; more are reset at once",
  },
  maxClientsPerAddress: {
    option: "dns-tcp-max-clients-per-address",
    unit: "count",
    default: 32,
    describe: "Most DNS-over-TCP connections open at once from one client address",
  },
  idleTimeoutMs: {
    option: "dns-tcp-idle-timeout",
    unit: "seconds",
    default: 10,
    describe: "Seconds a DNS-over-TCP connection may stay silent (nothing read or written) before it is closed",
  },
  messageTimeoutMs: {
    option: "dns-tcp-message-timeout",
    unit: "seconds",
    default: 5,
    describe: "Seconds a DNS message sent over TCP has to arrive whole, from its first byte; a slower client is disconnected",
  },
  maxLifetimeMs: {
    option: "dns-tcp-max-lifetime",
    unit: "seconds",
    default: 120,
    describe: "Seconds a DNS-over-TCP connection may stay open at all, however busy",
  },
} as const satisfies Record<string, { option: string; unit: "count" | "seconds"; default: number; describe: string }>;

/** The TCP limits in force: counts, and times in milliseconds. */
export type TcpLimits = { -readonly [K in keyof typeof TCP_LIMIT_OPTIONS]: number };

const MAX_TCP_COUNT = 65_536;
const MAX_TCP_SECONDS = 86_400;

function readTcpLimits(options: Record<string, unknown>): TcpLimits {
  const limits = {} as TcpLimits;
  for (const [key, spec] of Object.entries(TCP_LIMIT_OPTIONS) as [keyof TcpLimits, (typeof TCP_LIMIT_OPTIONS)[keyof TcpLimits]][]) {
    const raw = options[spec.option] ?? spec.default;
    const v = Number(raw);
    if (spec.unit === "count") {
      if (!Number.isInteger(v) || v < 1 || v > MAX_TCP_COUNT) throw new UserError(`--${spec.option}: ${raw} must be a whole number from 1 to ${MAX_TCP_COUNT}`);
      limits[key] = v;
    } else {
      if (!Number.isFinite(v) || v <= 0 || v > MAX_TCP_SECONDS)
        throw new UserError(`--${spec.option}: ${raw} must be a number of seconds above 0 and at most ${MAX_TCP_SECONDS}`);
      limits[key] = Math.round(v * 1000);
    }
  }
  return limits;
}

/** Repeatable options also accept comma lists ("a,b"), which is what a single env var or flag can carry. */
function list(v: unknown): string[] {
  if (v === undefined || v === null) return [];
  const arr = Array.isArray(v) ? v : [v];
  return arr
    .flatMap((s) => String(s).split(","))
    .map((s) => s.trim())
    .filter(Boolean);
}

export function addCidr(bl: BlockList, cidr: string, option: string): void {
  const [addr, bits] = cidr.split("/");
  const fam = isIP(addr);
  if (!fam) throw new UserError(`--${option}: "${cidr}" is not an IP address or CIDR range`);
  const type = fam === 4 ? "ipv4" : "ipv6";
  if (bits === undefined) return bl.addAddress(addr, type);
  const n = Number(bits);
  if (!Number.isInteger(n) || n < 0 || n > (fam === 4 ? 32 : 128)) throw new UserError(`--${option}: bad prefix length in "${cidr}"`);
  bl.addSubnet(addr, n, type);
}

export function parseHostPort(s: string, option: string): { host: string; port: number } {
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(s) ?? /^([^:]+):(\d+)$/.exec(s) ?? /^(\[?[^\]]+\]?)$/.exec(s);
  const host = m?.[1]?.replace(/^\[|\]$/g, "");
  const port = m?.[2] === undefined ? 53 : Number(m[2]);
  if (!host || !isIP(host) || !(port > 0 && port < 65536)) throw new UserError(`--${option}: "${s}" must be IP:port`);
  return { host, port };
}

export function readDnsConfig(options: Record<string, unknown>): DnsConfig {
  const edgeIpv4 = list(options["edge-ipv4"]);
  const edgeIpv6 = list(options["edge-ipv6"]);
  for (const a of edgeIpv4) if (isIP(a) !== 4) throw new UserError(`--edge-ipv4: "${a}" is not an IPv4 address`);
  for (const a of edgeIpv6) if (isIP(a) !== 6) throw new UserError(`--edge-ipv6: "${a}" is not an IPv6 address`);
  const platformAddresses = new BlockList();
  for (const a of [...edgeIpv4, ...edgeIpv6]) addCidr(platformAddresses, a, "edge-ip");
  for (const r of list(options["platform-ranges"])) addCidr(platformAddresses, r, "platform-ranges");
  const notifyTargets = list(options.notify).map((s) => parseHostPort(s, "notify"));
  const axfrAllow = new BlockList();
  for (const r of list(options["axfr-allow"])) addCidr(axfrAllow, r, "axfr-allow");
  // A secondary we notify is a secondary we let transfer.
  for (const t of notifyTargets) addCidr(axfrAllow, t.host, "notify");
  const nameServers = list(options["name-servers"]).map((n) => n.toLowerCase().replace(/\.$/, ""));
  if (nameServers.length === 0) throw new UserError("--name-servers: at least one name server is needed");
  const port = Number(options["dns-port"] ?? 1053);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UserError(`--dns-port: ${port} is not a port`);
  const workers = options["dns-workers"] === undefined ? defaultWorkers() : Number(options["dns-workers"]);
  if (!Number.isInteger(workers) || workers < 0 || workers > MAX_WORKERS)
    throw new UserError(`--dns-workers: ${options["dns-workers"]} must be a whole number from 0 to ${MAX_WORKERS}`);
  return {
    host: String(options["dns-host"] ?? "127.0.0.1"),
    port,
    edgeIpv4,
    edgeIpv6,
    nameServers,
    platformAddresses,
    axfrAllow,
    notifyTargets,
    workers,
    tcp: readTcpLimits(options),
  };
}

const MAX_WORKERS = 64;
/**
 * The default stops here: each process holds about 45 MB, all of them wait on one socket queue, and only
 * two-CPU machines have been measured; larger hosts can ask for more.
 */
const DEFAULT_WORKERS_CAP = 4;

/** One answering process per CPU (at most 4); on a single CPU the main process answers alone (a second process would only compete with it). */
function defaultWorkers(): number {
  const cpus = availableParallelism();
  return cpus > 1 ? Math.min(cpus, DEFAULT_WORKERS_CAP) : 0;
}
