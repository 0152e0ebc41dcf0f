import { defineCommand, type AnyCommand, type CommandAlias } from "../core/cli/command.js";
import { lazy } from "../core/cli/lazy.js";

const zoneArg = { name: "zone", describe: "The zone, by name (example.com) or id", required: true } as const;

/** What each of this area's command groups is for, shown by `edgecli <group> --help`. */
export const groups: Record<string, string> = {
  dns: "Manage DNS zones and records served by the platform's authoritative DNS server",
  "dns zone": "Create, list and delete zones",
  "dns record": "Create, list and delete records of a zone",
  "dns dnssec": "Sign a zone with DNSSEC, show the DS record for the registrar, roll its keys",
  "dns secondary": "Serve zones copied from another server (the platform as a secondary: AXFR/IXFR, NOTIFY, TSIG)",
};

/** This area's CLI commands: a thin client of the DNS API (the server itself runs inside `edgecli serve`). */
export const commands: AnyCommand[] = [
  defineCommand({
    path: ["dns", "zone", "create"],
    describe: "Create a DNS zone in the current account",
    positionals: [{ name: "name", describe: "The domain, e.g. example.com", required: true }],
    examples: ["edgecli dns zone create example.com"],
    handler: lazy(() => import("./cli/zone.js"), "createZone"),
  }),
  defineCommand({
    path: ["dns", "zone", "list"],
    describe: "List DNS zones (JSON)",
    handler: lazy(() => import("./cli/zone.js"), "listZones"),
  }),
  defineCommand({
    path: ["dns", "zone", "delete"],
    describe: "Delete a DNS zone and all its records",
    positionals: [zoneArg],
    options: { yes: { type: "boolean", alias: "y", describe: "Do not ask for confirmation (needed without a terminal)" } },
    handler: lazy(() => import("./cli/zone.js"), "deleteZone"),
  }),
  defineCommand({
    path: ["dns", "record", "list"],
    describe: "List a zone's records (JSON)",
    positionals: [zoneArg],
    options: {
      type: { type: "string", describe: "Only records of this type" },
      name: { type: "string", describe: "Only records with this fully qualified name" },
    },
    handler: lazy(() => import("./cli/record.js"), "listRecords"),
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
      proxied: {
        type: "boolean",
        describe:
          "Serve A/AAAA/CNAME through the edge: DNS answers the edge's addresses and the edge forwards to this content (a public address, or one `edgecli serve --origin-allow` allows; docs/proxy.md)",
      },
      comment: { type: "string", describe: "A note kept with the record" },
    },
    examples: [
      "edgecli dns record create example.com --type A --name www --content 203.0.113.10",
      `edgecli dns record create example.com --type SRV --name _sip._tcp --data '{"priority":10,"weight":5,"port":5060,"target":"sip.example.com"}'`,
    ],
    handler: lazy(() => import("./cli/record.js"), "createRecord"),
  }),
  defineCommand({
    path: ["dns", "record", "delete"],
    describe: "Delete a record",
    positionals: [zoneArg, { name: "id", describe: "The record id", required: true }],
    handler: lazy(() => import("./cli/record.js"), "deleteRecord"),
  }),
  defineCommand({
    path: ["dns", "export"],
    describe: "Print the zone as a BIND zone file",
    positionals: [zoneArg],
    handler: lazy(() => import("./cli/zone-file.js"), "exportZone"),
  }),
  defineCommand({
    path: ["dns", "import"],
    describe: "Add the records of a BIND zone file to the zone",
    positionals: [zoneArg, { name: "file", describe: "The zone file (- for stdin)", required: true }],
    options: { proxied: { type: "boolean", describe: "Proxy imported A/AAAA/CNAME records that carry no proxied tag" } },
    handler: lazy(() => import("./cli/zone-file.js"), "importZone"),
  }),
  defineCommand({
    path: ["dns", "dnssec", "enable"],
    describe: "Sign the zone with DNSSEC and print the DS record to put at the registrar",
    positionals: [zoneArg],
    examples: ["edgecli dns dnssec enable example.com"],
    handler: lazy(() => import("./cli/dnssec.js"), "enable"),
  }),
  defineCommand({
    path: ["dns", "dnssec", "disable"],
    describe: "Stop signing the zone (remove the DS at the registrar first); its keys are kept for a later enable",
    positionals: [zoneArg],
    handler: lazy(() => import("./cli/dnssec.js"), "disable"),
  }),
  defineCommand({
    path: ["dns", "dnssec", "status"],
    describe: "Show whether the zone is signed, its DS record and any key rollover in progress",
    positionals: [zoneArg],
    handler: lazy(() => import("./cli/dnssec.js"), "status"),
  }),
  defineCommand({
    path: ["dns", "dnssec", "rollover"],
    describe: "Roll a key: the first run starts the rollover, each later run takes the next step once it is safe (docs/dns.md)",
    positionals: [zoneArg],
    options: {
      zsk: { type: "boolean", describe: "Roll the zone-signing key (pre-publication; nothing changes at the registrar)" },
      ksk: { type: "boolean", describe: "Roll the key-signing key (double signature; the DS at the registrar changes)" },
    },
    examples: ["edgecli dns dnssec rollover example.com --zsk"],
    handler: lazy(() => import("./cli/dnssec.js"), "rollover"),
  }),
  defineCommand({
    path: ["dns", "secondary", "create"],
    describe: "Create a secondary zone copied from its primary server(s), optionally over TSIG; the first transfer starts at once",
    positionals: [{ name: "zone", describe: "The domain, e.g. example.com", required: true }],
    options: {
      primary: { type: "strings", describe: "A primary's address, with an optional port: 192.0.2.1, 192.0.2.1:5353, [2001:db8::1]:53 (repeatable)" },
      "tsig-name": { type: "string", describe: "Name of the TSIG key, as the primary knows it (an existing key of the account is reused)" },
      "tsig-secret-file": {
        type: "string",
        describe: "File holding the new key's base64 secret, or - for stdin (a hidden prompt on a terminal); never given on the command line",
      },
      "tsig-algorithm": {
        type: "string",
        describe: "Algorithm of a new TSIG key",
        choices: ["hmac-sha256", "hmac-sha512", "hmac-md5"],
        default: "hmac-sha256",
      },
      ixfr: { type: "boolean", describe: "Ask the primaries for incremental transfers (IXFR) once the zone holds a copy" },
      "refresh-max": { type: "number", describe: "Longest time between two refreshes in seconds (30-604800), whatever the SOA refresh says (default: a day)" },
    },
    examples: [
      "edgecli dns secondary create example.com --primary 192.0.2.1",
      "openssl rand -base64 32 > xfr.key; edgecli dns secondary create example.com --primary 192.0.2.1:53 --tsig-name xfr-key --tsig-secret-file xfr.key --ixfr",
    ],
    handler: lazy(() => import("./cli/secondary.js"), "createSecondary"),
  }),
  defineCommand({
    path: ["dns", "secondary", "status"],
    describe: "Show a secondary zone's transfer state: serial, last transfer, next refresh, expiry, last error",
    positionals: [zoneArg],
    options: { json: { type: "boolean", describe: "Print the API's answer as JSON" } },
    handler: lazy(() => import("./cli/secondary.js"), "secondaryStatus"),
  }),
  defineCommand({
    path: ["dns", "secondary", "transfer"],
    describe: "Transfer the whole zone (AXFR) from its primaries now; waits for it and fails when no primary answered",
    positionals: [zoneArg],
    handler: lazy(() => import("./cli/secondary.js"), "forceTransfer"),
  }),
  defineCommand({
    path: ["dns", "secondary", "delete"],
    describe: "Delete a secondary zone, the peers `create` made for it (unless other zones use them) and their TSIG key once unused",
    positionals: [zoneArg],
    options: { yes: { type: "boolean", alias: "y", describe: "Do not ask for confirmation (needed without a terminal)" } },
    handler: lazy(() => import("./cli/secondary.js"), "deleteSecondary"),
  }),
];
/** Deprecated spellings of this area's command groups. */
export const aliases: CommandAlias[] = [];

export { serveOptions } from "./config.js";
