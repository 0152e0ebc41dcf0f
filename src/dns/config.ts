import { BlockList, isIP } from "node:net";
import { availableParallelism } from "node:os";
import type { OptionSpec, OptionValues } from "../core/cli/command.js";
import { UserError } from "../core/errors.js";
import { parseZoneName } from "./zones/names.js";

/**
 * Options this area adds to `edgecli serve` (defaults live only here). "strings" options repeat, and each value may
 * also be a comma list.
 */
export const serveOptions = {
  "dns-host": { type: "string", describe: "Address the authoritative DNS server listens on (UDP and TCP)", default: "127.0.0.1" },
  "dns-port": { type: "number", describe: "DNS port for UDP and TCP; 0 picks a free one; 53 needs privileges", default: 1053 },
  "edge-ipv4": { type: "strings", describe: "IPv4 addresses proxied names answer with (repeatable)", default: ["192.0.2.10", "192.0.2.11"] },
  "edge-ipv6": { type: "strings", describe: "IPv6 addresses proxied names answer with (repeatable)", default: ["2001:db8::10", "2001:db8::11"] },
  "name-servers": {
    type: "strings",
    describe: "Host names of the zones' authoritative name servers (NS at every apex)",
    default: ["ns1.edge-platform.test", "ns2.edge-platform.test"],
  },
  "platform-ranges": { type: "strings", describe: "CIDR ranges owned by the platform; A/AAAA records may not point into them (edge addresses always count)" },
  "axfr-allow": { type: "strings", describe: "CIDR ranges allowed to transfer zones (AXFR); default loopback only", default: ["127.0.0.0/8", "::1/128"] },
  "dns-workers": {
    type: "number",
    describe: "Processes answering DNS over UDP on the port (default: one per CPU, at most 4); 0 or 1 answers in the main process",
  },
  "dns-prewarm": {
    type: "number",
    describe:
      "Answers built ahead of any question after start and after each change (each zone name with each type it holds), so the first queries are served from the cache; 0 turns this off",
    // About 1 MB of answers in each answering process for a zone of 5,000 names.
    default: 5000,
  },
  "dns-peer-allow": {
    type: "strings",
    describe:
      "CIDR ranges tenants' DNS transfer peers (primaries of secondary zones, secondaries sent NOTIFY) may be in besides public addresses; default none, so no tenant can make the platform connect into this host or its private network",
  },
  notify: { type: "strings", describe: "Secondaries (host:port) sent a DNS NOTIFY when a zone's serial changes; they may also transfer" },
  // Limits on DNS over TCP. Without them one client could hold a connection forever by trickling a byte at a time,
  // or hold every file descriptor the process has.
  "dns-tcp-max-clients": { type: "number", describe: "Most DNS-over-TCP connections open at once; more are reset at once", default: 256 },
  "dns-tcp-max-clients-per-address": { type: "number", describe: "Most DNS-over-TCP connections open at once from one client address", default: 32 },
  "dns-tcp-idle-timeout": {
    type: "number",
    describe: "Seconds a DNS-over-TCP connection may stay silent (nothing read or written) before it is closed",
    default: 10,
  },
  "dns-tcp-message-timeout": {
    type: "number",
    describe: "Seconds a DNS message sent over TCP has to arrive whole, from its first byte; a slower client is disconnected",
    default: 5,
  },
  "dns-tcp-max-lifetime": { type: "number", describe: "Seconds a DNS-over-TCP connection may stay open at all, however busy", default: 120 },
  "dns-allow-zone": {
    type: "strings",
    describe:
      "Zone names tenants may create although they are public suffixes (a private-section name of the Public Suffix List this operator owns, such as its own dynamic-DNS domain); repeatable",
  },
  "dns-max-records-per-zone": {
    type: "number",
    describe:
      "Most records one zone may hold (API, batch, import and incoming zone transfers alike); a change that would pass it is refused whole with code 81045",
    // A 200,000-record zone costs about 230 MB of heap on this platform (docs/benchmarks.md); the suite's and
    // bench/dns's largest zones are this size. The hosted API's plans stop at 200 to 3,500 (1,000,000 on Enterprise).
    default: 200_000,
  },
  "dnssec-rollover-wait": {
    type: "number",
    describe: "Seconds each DNSSEC key rollover step waits instead of the TTLs that make it safe (labs and tests only)",
  },
} satisfies Record<string, OptionSpec>;

export type DnsOptions = OptionValues<typeof serveOptions>;

/** The limits in force on DNS over TCP: counts, and times in milliseconds. */
export interface TcpLimits {
  maxClients: number;
  maxClientsPerAddress: number;
  idleTimeoutMs: number;
  messageTimeoutMs: number;
  maxLifetimeMs: number;
}

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
  /** Non-public addresses tenants' transfer peers may have (transfers/addresses.ts peerAddressAllowed). */
  peerAllow: BlockList;
  notifyTargets: { host: string; port: number }[];
  /** Processes answering UDP on the port (each its own SO_REUSEPORT socket, udp/pool.ts); 0 or 1 answers in the main process. */
  answeringProcesses: number;
  /** Most answers built ahead per round (server/prewarm.ts); 0: none. Undefined: the default. */
  prewarm?: number;
  tcp: TcpLimits;
  /** Public-suffix names an operator lets tenants create as zones (zones/registrable.ts). */
  allowedZones: ReadonlySet<string>;
  /** Most records a zone may hold (zones/zone-service.ts checks, the stores enforce). */
  maxRecordsPerZone: number;
  /** Seconds between DNSSEC rollover steps when set; undefined: the TTLs (dnssec/dnssec-service.ts). */
  dnssecRolloverWait?: number;
}

const MAX_TCP_COUNT = 65_536;
const MAX_TCP_SECONDS = 86_400;
const MAX_ANSWERING_PROCESSES = 64;
/** The answering processes' caches hold 50,000 answers; more built ahead would only push each other out. */
const MAX_PREWARM = 50_000;
/** Beyond this a zone is more than one process holds in memory comfortably (about 1.2 KB of heap per record). */
const MAX_RECORDS_PER_ZONE = 10_000_000;
/**
 * The default stops here: each process holds about 45 MB, each wakes for its own share of the queries, and only
 * two-CPU machines have been measured; larger hosts can ask for more.
 */
const DEFAULT_ANSWERING_PROCESSES_CAP = 4;

export function readDnsConfig(options: DnsOptions): DnsConfig {
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
  const peerAllow = new BlockList();
  for (const r of list(options["dns-peer-allow"])) addCidr(peerAllow, r, "dns-peer-allow");
  // A secondary we notify is a secondary we let transfer.
  for (const t of notifyTargets) addCidr(axfrAllow, t.host, "notify");
  const nameServers = list(options["name-servers"]).map((n) => n.toLowerCase().replace(/\.$/, ""));
  if (nameServers.length === 0) throw new UserError("--name-servers: at least one name server is needed");
  const port = options["dns-port"];
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UserError(`--dns-port: ${port} is not a port`);
  const answeringProcesses = options["dns-workers"] ?? defaultAnsweringProcesses();
  if (!Number.isInteger(answeringProcesses) || answeringProcesses < 0 || answeringProcesses > MAX_ANSWERING_PROCESSES)
    throw new UserError(`--dns-workers: ${options["dns-workers"]} must be a whole number from 0 to ${MAX_ANSWERING_PROCESSES}`);
  const prewarm = options["dns-prewarm"];
  if (!Number.isInteger(prewarm) || prewarm < 0 || prewarm > MAX_PREWARM)
    throw new UserError(`--dns-prewarm: ${prewarm} must be a whole number from 0 to ${MAX_PREWARM}`);
  const rolloverWait = options["dnssec-rollover-wait"];
  if (rolloverWait !== undefined && !(Number.isInteger(rolloverWait) && rolloverWait >= 0))
    throw new UserError(`--dnssec-rollover-wait: ${rolloverWait} must be a whole number of seconds, 0 or more`);
  const maxRecords = options["dns-max-records-per-zone"];
  if (!Number.isInteger(maxRecords) || maxRecords < 1 || maxRecords > MAX_RECORDS_PER_ZONE)
    throw new UserError(`--dns-max-records-per-zone: ${maxRecords} must be a whole number from 1 to ${MAX_RECORDS_PER_ZONE}`);
  const allowedZones = new Set<string>();
  for (const n of list(options["dns-allow-zone"])) {
    const name = parseZoneName(n);
    if (!name) throw new UserError(`--dns-allow-zone: "${n}" is not a domain name of two labels or more`);
    allowedZones.add(name);
  }
  return {
    host: options["dns-host"],
    allowedZones,
    maxRecordsPerZone: maxRecords,
    dnssecRolloverWait: rolloverWait,
    port,
    edgeIpv4,
    edgeIpv6,
    nameServers,
    platformAddresses,
    axfrAllow,
    peerAllow,
    notifyTargets,
    answeringProcesses,
    prewarm,
    tcp: {
      maxClients: count(options["dns-tcp-max-clients"], "dns-tcp-max-clients"),
      maxClientsPerAddress: count(options["dns-tcp-max-clients-per-address"], "dns-tcp-max-clients-per-address"),
      idleTimeoutMs: milliseconds(options["dns-tcp-idle-timeout"], "dns-tcp-idle-timeout"),
      messageTimeoutMs: milliseconds(options["dns-tcp-message-timeout"], "dns-tcp-message-timeout"),
      maxLifetimeMs: milliseconds(options["dns-tcp-max-lifetime"], "dns-tcp-max-lifetime"),
    },
  };
}

function count(v: number, option: string): number {
  if (!Number.isInteger(v) || v < 1 || v > MAX_TCP_COUNT) throw new UserError(`--${option}: ${v} must be a whole number from 1 to ${MAX_TCP_COUNT}`);
  return v;
}

function milliseconds(seconds: number, option: string): number {
  if (!Number.isFinite(seconds) || seconds <= 0 || seconds > MAX_TCP_SECONDS)
    throw new UserError(`--${option}: ${seconds} must be a number of seconds above 0 and at most ${MAX_TCP_SECONDS}`);
  return Math.round(seconds * 1000);
}

/** Repeatable options also accept comma lists ("a,b"), which is what a single env var or flag can carry. */
function list(v: readonly string[] | undefined): string[] {
  return (v ?? [])
    .flatMap((s) => s.split(","))
    .map((s) => s.trim())
    .filter(Boolean);
}

function addCidr(bl: BlockList, cidr: string, option: string): void {
  const [addr, bits] = cidr.split("/");
  const fam = isIP(addr);
  if (!fam) throw new UserError(`--${option}: "${cidr}" is not an IP address or CIDR range`);
  const type = fam === 4 ? "ipv4" : "ipv6";
  if (bits === undefined) return bl.addAddress(addr, type);
  const n = Number(bits);
  if (!Number.isInteger(n) || n < 0 || n > (fam === 4 ? 32 : 128)) throw new UserError(`--${option}: bad prefix length in "${cidr}"`);
  bl.addSubnet(addr, n, type);
}

function parseHostPort(s: string, option: string): { host: string; port: number } {
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(s) ?? /^([^:]+):(\d+)$/.exec(s) ?? /^(\[?[^\]]+\]?)$/.exec(s);
  const host = m?.[1]?.replace(/^\[|\]$/g, "");
  const port = m?.[2] === undefined ? 53 : Number(m[2]);
  if (!host || !isIP(host) || !(port > 0 && port < 65536)) throw new UserError(`--${option}: "${s}" must be IP:port`);
  return { host, port };
}

/** One answering process per CPU (at most 4); on a single CPU the main process answers alone (a second process would only compete with it). */
function defaultAnsweringProcesses(): number {
  const cpus = availableParallelism();
  return cpus > 1 ? Math.min(cpus, DEFAULT_ANSWERING_PROCESSES_CAP) : 0;
}
