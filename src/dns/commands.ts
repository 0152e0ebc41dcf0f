import { defineCommand, type AnyCommand, type CommandAlias, type OptionSpec } from "../core/cli/command.js";
import { TCP_LIMIT_OPTIONS } from "./config.js";

// Handlers are imported on use, so `edgecli` starts without loading them.
const handlers = () => import("./cli-handlers.js");
const zoneArg = { name: "zone", describe: "The zone, by name (example.com) or id", required: true } as const;

/** What each of this area's command groups is for, shown by `edgecli <group> --help`. */
export const groups: Record<string, string> = {
  dns: "Manage DNS zones and records served by the platform's authoritative DNS server",
  "dns zone": "Create, list and delete zones",
  "dns record": "Create, list and delete records of a zone",
};

/** This area's CLI commands: a thin client of the DNS API (the server itself runs inside `edgecli serve`). */
export const commands: AnyCommand[] = [
  defineCommand({
    path: ["dns", "zone", "create"],
    describe: "Create a DNS zone in the current account",
    positionals: [{ name: "name", describe: "The domain, e.g. example.com", required: true }],
    examples: ["edgecli dns zone create example.com"],
    handler: async (args, ctx) => (await handlers()).zoneCreate(args.name!, ctx),
  }),
  defineCommand({
    path: ["dns", "zone", "list"],
    describe: "List DNS zones (JSON)",
    handler: async (_args, ctx) => (await handlers()).zoneList(ctx),
  }),
  defineCommand({
    path: ["dns", "zone", "delete"],
    describe: "Delete a DNS zone and all its records",
    positionals: [zoneArg],
    options: { yes: { type: "boolean", alias: "y", describe: "Do not ask for confirmation" } },
    handler: async (args, ctx) => (await handlers()).zoneDelete(args.zone!, !!args.yes, ctx),
  }),
  defineCommand({
    path: ["dns", "record", "list"],
    describe: "List a zone's records (JSON)",
    positionals: [zoneArg],
    options: {
      type: { type: "string", describe: "Only records of this type" },
      name: { type: "string", describe: "Only records with this fully qualified name" },
    },
    handler: async (args, ctx) => (await handlers()).recordList(args.zone!, { type: args.type, name: args.name }, ctx),
  }),
  defineCommand({
    path: ["dns", "record", "create"],
    describe: "Create a record (prints it as JSON)",
    positionals: [zoneArg],
    options: {
      type: { type: "string", describe: "Record type (A, AAAA, CNAME, MX, TXT, SRV, ...)" },
      name: { type: "string", describe: "Name: relative (www), @ for the apex, or fully qualified" },
      content: { type: "string", describe: "Content (address, host name, text, ...)" },
      data: { type: "string", describe: "JSON of the data object for structured types (SRV, CAA, ...)" },
      ttl: { type: "number", describe: "TTL in seconds (60-86400) or 1 for automatic", default: 1 },
      priority: { type: "number", describe: "Priority of MX and URI records" },
      proxied: { type: "boolean", describe: "Serve A/AAAA/CNAME through the edge" },
      comment: { type: "string", describe: "A note kept with the record" },
    },
    examples: [
      "edgecli dns record create example.com --type A --name www --content 203.0.113.10",
      `edgecli dns record create example.com --type SRV --name _sip._tcp --data '{"priority":10,"weight":5,"port":5060,"target":"sip.example.com"}'`,
    ],
    handler: async (args, ctx) => (await handlers()).recordCreate(args.zone!, args, ctx),
  }),
  defineCommand({
    path: ["dns", "record", "delete"],
    describe: "Delete a record",
    positionals: [zoneArg, { name: "id", describe: "The record id", required: true }],
    handler: async (args, ctx) => (await handlers()).recordDelete(args.zone!, args.id!, ctx),
  }),
  defineCommand({
    path: ["dns", "export"],
    describe: "Print the zone as a BIND zone file",
    positionals: [zoneArg],
    handler: async (args, ctx) => (await handlers()).zoneExport(args.zone!, ctx),
  }),
  defineCommand({
    path: ["dns", "import"],
    describe: "Add the records of a BIND zone file to the zone",
    positionals: [zoneArg, { name: "file", describe: "The zone file (- for stdin)", required: true }],
    options: { proxied: { type: "boolean", describe: "Proxy imported A/AAAA/CNAME records that carry no proxied tag" } },
    handler: async (args, ctx) => (await handlers()).zoneImport(args.zone!, args.file!, !!args.proxied, ctx),
  }),
];
/** Deprecated spellings of this area's command groups. */
export const aliases: CommandAlias[] = [];

/** Options this area adds to `edgecli serve`. "strings" options repeat, and each value may also be a comma list. */
export const serveOptions: Record<string, OptionSpec> = {
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
    describe: "Processes answering DNS over UDP on one shared socket (default: one per CPU, at most 4); 0 or 1 answers in the main process",
  },
  notify: { type: "strings", describe: "Secondaries (host:port) sent a DNS NOTIFY when a zone's serial changes; they may also transfer" },
  ...Object.fromEntries(
    Object.values(TCP_LIMIT_OPTIONS).map((l) => [l.option, { type: "number", describe: l.describe, default: l.default } satisfies OptionSpec]),
  ),
};
