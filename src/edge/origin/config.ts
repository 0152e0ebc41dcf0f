import { readFileSync } from "node:fs";
import { BlockList, isIP } from "node:net";
import type { OptionSpec, OptionValues } from "../../core/cli/command.js";
import { UserError } from "../../core/errors.js";

/** The proxy's part of `edgecli serve` (merged into the edge's options by edge/commands.ts). */
export const originServeOptions = {
  "origin-allow": {
    type: "strings",
    describe:
      "Addresses or CIDR ranges (comma-separated or repeated) proxied records' origins may be in besides public addresses, e.g. 127.0.0.2 for an origin on this host; default none, so no tenant can make the edge connect into this host or its private network (such a record gets the 1000 page)",
  },
  "origin-timeout": { type: "number", describe: "Seconds the edge waits for an origin's answer head before answering 524", default: 100 },
  "origin-connect-timeout": { type: "number", describe: "Seconds the edge waits for a connection to an origin before answering 522", default: 15 },
  "origin-ca-file": { type: "string", describe: "PEM file of CA certificates trusted for origins under SSL mode strict, besides the system's" },
  "origin-resolver": {
    type: "strings",
    describe:
      "Name servers (ip, ip:port or [ipv6]:port; comma-separated or repeated) that resolve tenants' outside names: proxied CNAME targets outside the zones here, Workers' fetch() and connect() hosts; default the system's (/etc/resolv.conf). /etc/hosts is never read for these names",
  },
} satisfies Record<string, OptionSpec>;

export interface OriginConfig {
  /** Non-public addresses origins may have (loopback, private ranges), as the operator allowed. */
  originAllow: BlockList;
  originTimeoutMs: number;
  originConnectTimeoutMs: number;
  /** Extra CAs for `strict`, PEM; undefined: the system's only. */
  originCa?: string;
  /** Name servers for tenants' outside names (ip, ip:port, [ipv6]:port); empty: the system's. */
  originResolvers: string[];
}

export function readOriginConfig(options: OptionValues<typeof originServeOptions>): OriginConfig {
  const originAllow = new BlockList();
  for (const cidr of (options["origin-allow"] ?? [])
    .flatMap((v) => v.split(","))
    .map((v) => v.trim())
    .filter(Boolean))
    addCidr(originAllow, cidr);
  const seconds = (name: "origin-timeout" | "origin-connect-timeout") => {
    const v = options[name];
    if (typeof v !== "number" || !(v > 0) || v > 6000) throw new UserError(`--${name}: ${v} must be a number of seconds above 0 and at most 6000`);
    return Math.round(v * 1000);
  };
  let originCa: string | undefined;
  const caFile = options["origin-ca-file"];
  if (caFile) {
    try {
      originCa = readFileSync(caFile, "utf8");
    } catch (err) {
      throw new UserError(`--origin-ca-file: cannot read ${caFile}: ${(err as Error).message}`);
    }
    if (!originCa.includes("-----BEGIN CERTIFICATE-----")) throw new UserError(`--origin-ca-file: ${caFile} holds no PEM certificate`);
  }
  const originResolvers = (options["origin-resolver"] ?? [])
    .flatMap((v) => v.split(","))
    .map((v) => v.trim())
    .filter(Boolean);
  for (const server of originResolvers) {
    if (!isNameServer(server)) throw new UserError(`--origin-resolver: "${server}" is not an IP address, ip:port or [ipv6]:port`);
  }
  return {
    originAllow,
    originTimeoutMs: seconds("origin-timeout"),
    originConnectTimeoutMs: seconds("origin-connect-timeout"),
    originCa,
    originResolvers,
  };
}

/** A name server as c-ares takes it (Resolver.setServers): an address, with a port as ip:port or [ipv6]:port. */
function isNameServer(server: string): boolean {
  if (isIP(server)) return true;
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|(\d{1,3}(?:\.\d{1,3}){3})):(\d{1,5})$/.exec(server);
  const port = Number(m?.[3]);
  return m !== null && isIP(m[1] ?? m[2]) !== 0 && port > 0 && port < 65536;
}

function addCidr(bl: BlockList, cidr: string): void {
  const [addr, bits] = cidr.split("/");
  const family = isIP(addr);
  if (!family) throw new UserError(`--origin-allow: "${cidr}" is not an IP address or CIDR range`);
  const type = family === 4 ? "ipv4" : "ipv6";
  if (bits === undefined) return bl.addAddress(addr, type);
  const n = Number(bits);
  if (!/^\d+$/.test(bits) || n > (family === 4 ? 32 : 128)) throw new UserError(`--origin-allow: bad prefix length in "${cidr}"`);
  bl.addSubnet(addr, n, type);
}
