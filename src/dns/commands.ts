import type { AnyCommand, CommandAlias, OptionSpec } from "../core/cli/command.js";

/** This area's CLI commands (the DNS API is driven with the v4 clients; the server runs inside `edgecli serve`). */
export const commands: AnyCommand[] = [];
/** Deprecated spellings of this area's command groups. */
export const aliases: CommandAlias[] = [];

/** Options this area adds to `edgecli serve`. "strings" options repeat, and each value may also be a comma list. */
export const serveOptions: Record<string, OptionSpec> = {
  "dns-host": { type: "string", describe: "Address the authoritative DNS server listens on (UDP and TCP)", default: "127.0.0.1" },
  "dns-port": { type: "number", describe: "DNS port for UDP and TCP; 0 picks a free one; 53 needs privileges", default: 1053 },
  "edge-ipv4": { type: "strings", describe: "IPv4 addresses proxied names answer with (repeatable)", default: ["192.0.2.10", "192.0.2.11"] },
  "edge-ipv6": { type: "strings", describe: "IPv6 addresses proxied names answer with (repeatable)", default: ["2001:db8::10", "2001:db8::11"] },
  "name-servers": { type: "strings", describe: "Host names of the zones' authoritative name servers (NS at every apex)", default: ["ns1.edge-platform.test", "ns2.edge-platform.test"] },
  "platform-ranges": { type: "strings", describe: "CIDR ranges owned by the platform; A/AAAA records may not point into them (edge addresses always count)" },
  "axfr-allow": { type: "strings", describe: "CIDR ranges allowed to transfer zones (AXFR); default loopback only", default: ["127.0.0.0/8", "::1/128"] },
  notify: { type: "strings", describe: "Secondaries (host:port) sent a DNS NOTIFY when a zone's serial changes; they may also transfer" },
};
