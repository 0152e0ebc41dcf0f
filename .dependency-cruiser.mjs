// Who may import whom in src/ (docs/ARCHITECTURE.md, "Who may import whom"). src/architecture.test.ts runs
// dependency-cruiser with these rules on every test run and fails on any violation that is not listed in
// `knownViolations` below; `npx depcruise src --config .dependency-cruiser.mjs` shows every violation, the known
// ones included.
//
// Words used below: an *area* is a folder of src/ other than core/ (ai-gateway, d1, dashboard, dns, edge, kv,
// queues, r2, workers, and whatever comes next); *test code* is a `*.test.ts`, a `*.contract.ts` or anything in a
// `testing/` folder; everything else is *production code*.

const TEST_CODE = "(\\.test\\.ts$|\\.contract\\.ts$|/testing/)";
const AREA = "^src/(?!core/)[^/]+/";
const STORE_FILE = "/(store|sqlite-[^/]*|pg-[^/]*)\\.ts$";
const OTHER_AREA_STORE = "^src/(?!core/).*/(store|sqlite-[^/]*|pg-[^/]*)\\.ts$";
const TYPE_ONLY = ["type-only", "type-import"];
/** Areas already split into feature folders that own their storage (issue 32 item 2). */
const FEATURE_AREAS = "ai-gateway|r2";
/** Folders of src/dns/ (its layers, docs/ARCHITECTURE.md "Area: DNS"). */
const DNS = (...dirs) => `^src/dns/(${dirs.join("|")})/`;

/** @type {import("dependency-cruiser").IConfiguration} */
export default {
  forbidden: [
    {
      name: "core-imports-no-area",
      comment:
        "core is the plumbing every area stands on: it never imports an area, nor the composition root " +
        "(src/*.ts). What core needs from an area is handed to it by src/platform.ts or src/commands.ts.",
      severity: "error",
      from: { path: "^src/core/", pathNot: "\\.test\\.ts$" },
      to: { path: [AREA, "^src/[^/]+\\.ts$"] },
    },
    {
      name: "no-other-area-store",
      comment:
        "An area's storage (store.ts, sqlite-*.ts, pg-*.ts) is its own. Another area asks through a port " +
        "that src/platform.ts hands over (a function or a narrow interface on the service), never the store.",
      severity: "error",
      from: { path: "^src/([^/]+)/", pathNot: ["^src/core/", TEST_CODE] },
      to: { path: OTHER_AREA_STORE, pathNot: "^src/$1/" },
    },
    {
      name: "no-other-area-internals",
      comment:
        "Production code of one area imports nothing of another area but the type of its service " +
        "(<area>/service.ts), the port src/platform.ts hands over.",
      severity: "error",
      from: { path: "^src/([^/]+)/", pathNot: ["^src/core/", TEST_CODE] },
      to: { path: AREA, pathNot: ["^src/$1/", "^src/[^/]+/service\\.ts$", STORE_FILE] },
    },
    {
      name: "cli-imports-no-other-area",
      comment:
        "An area's CLI (commands.ts, cli/) is a client of the v4 API: it imports nothing of another area, not even " +
        "its service type. A section of a wrangler config one area's command acts on for another's (edgecli deploy) " +
        "goes through core/cli/deploy-sections.ts, registered by src/commands.ts.",
      severity: "error",
      from: { path: "^src/([^/]+)/(commands\\.ts$|cli/)", pathNot: ["^src/core/", TEST_CODE] },
      to: { path: AREA, pathNot: "^src/$1/" },
    },
    {
      name: "other-area-service-type-only",
      comment:
        "Only the composition root (src/platform.ts) creates services; an area imports another area's " + "service.ts for its type only (`import type`).",
      severity: "error",
      from: { path: "^src/([^/]+)/", pathNot: ["^src/core/", TEST_CODE] },
      to: { path: "^src/[^/]+/service\\.ts$", pathNot: "^src/$1/", dependencyTypesNot: TYPE_ONLY },
    },
    {
      name: "no-value-cycles",
      comment:
        "Modules whose values import each other (directly or around a loop) load half-initialised. Type-only " +
        "imports vanish at compile time and do not count; a lazy `import()` does not either.",
      severity: "error",
      from: {},
      to: {
        circular: true,
        dependencyTypesNot: [...TYPE_ONLY, "dynamic-import"],
        viaOnly: { dependencyTypesNot: [...TYPE_ONLY, "dynamic-import"] },
      },
    },
    // The DNS area is layered as Knot DNS's tree is: zones/ (the zones and their serving state) under nameserver/
    // (answers, AXFR, NOTIFY, TSIG and the record types they share), under dnssec/ and transfers/ (side by side),
    // under server/ (UDP/TCP transport, the answering processes, limits). A layer imports the ones under it, type
    // imports included; what a lower one needs of a higher one it defines as a port (nameserver/signing.ts,
    // nameserver/transfer-queries.ts) that dns/service.ts hands over.
    {
      name: "dns-zones-import-no-layer-above",
      comment: "dns/zones/ holds the zones and whether each is served: every other DNS layer reads it, it reads none of them.",
      severity: "error",
      from: { path: DNS("zones"), pathNot: TEST_CODE },
      to: { path: DNS("nameserver", "dnssec", "transfers", "server") },
    },
    {
      name: "dns-nameserver-imports-no-layer-above",
      comment:
        "dns/nameserver/ answers from the zones; DNSSEC signs through its AnswerSigning port and the transfers answer through " +
        "its TransferQueries port, so it imports neither, nor the transport that calls it.",
      severity: "error",
      from: { path: DNS("nameserver"), pathNot: TEST_CODE },
      to: { path: DNS("dnssec", "transfers", "server") },
    },
    {
      name: "dns-dnssec-and-transfers-apart",
      comment:
        "dns/dnssec/ (keys, signatures) and dns/transfers/ (TSIG keys, peers, secondary zones, the journal) stand side by " +
        "side on the nameserver: neither imports the other, nor the transport above them.",
      severity: "error",
      from: { path: DNS("dnssec", "transfers"), pathNot: TEST_CODE },
      to: { path: [DNS("server"), "^src/dns/(dnssec|transfers)/"], pathNot: "^src/dns/$1/" },
    },
    {
      name: "dns-server-is-transport",
      comment:
        "dns/server/ carries queries in and answers out (sockets, the answering processes, limits): it asks the nameserver, " +
        "and reaches DNSSEC and the transfers only through the nameserver's ports.",
      severity: "error",
      from: { path: DNS("server"), pathNot: TEST_CODE },
      to: { path: DNS("dnssec", "transfers") },
    },
    {
      name: "feature-storage-stays-in-its-folder",
      comment:
        "In an area split into feature folders (ai-gateway/gateways, keys, logs; r2/objects, multipart, cors, " +
        "notifications), a feature's backend files (sqlite-*.ts, pg-*.ts) are its own: another feature needs a " +
        "narrow interface it declares, and only the area's top (sqlite-store.ts, pg-store.ts, service.ts, the " +
        "composition) puts the backends together.",
      severity: "error",
      from: { path: `^src/(${FEATURE_AREAS})/([^/]+)/`, pathNot: TEST_CODE },
      to: { path: `^src/(${FEATURE_AREAS})/[^/]+/(sqlite|pg)-[^/]*\\.ts$`, pathNot: "^src/$1/$2/" },
    },
    {
      name: "area-top-storage-is-composition",
      comment:
        "At the top of an area split into feature folders, the only backend files are the composition: " +
        "sqlite-store.ts, pg-store.ts and the migrations. A feature's storage lives in its folder.",
      severity: "error",
      from: { path: `^src/(${FEATURE_AREAS})/(sqlite|pg)-(?!store\\.ts$|migrations\\.ts$)[^/]*\\.ts$` },
      to: {},
    },
    {
      name: "no-cycles-in-feature-areas",
      comment:
        "The files of ai-gateway/ and r2/ import each other in one direction only, types included: a feature's " +
        "store.ts before its backends and its logic, metering before the proxy and the logs.",
      severity: "error",
      from: { path: `^src/(${FEATURE_AREAS})/`, pathNot: TEST_CODE },
      to: { path: `^src/(${FEATURE_AREAS})/`, circular: true },
    },
    {
      name: "ai-gateway-metering-below-proxy-and-logs",
      comment:
        "Metering (usage, cost, prices: ai-gateway/metering/) is used by the proxy (usage of streams) and the log " +
        "builder (logs/draft.ts) and imports neither; the logs import nothing of the proxy.",
      severity: "error",
      from: { path: "^src/ai-gateway/(metering|logs)/", pathNot: TEST_CODE },
      to: { path: "^src/ai-gateway/(proxy|logs)/", pathNot: "^src/ai-gateway/logs/" },
    },
    {
      name: "ai-gateway-metering-imports-no-logs",
      comment: "Metering is below the logs (see ai-gateway-metering-below-proxy-and-logs).",
      severity: "error",
      from: { path: "^src/ai-gateway/metering/", pathNot: TEST_CODE },
      to: { path: "^src/ai-gateway/logs/" },
    },
    {
      name: "r2-one-body-policy",
      comment:
        "Whether an R2 body is read whole or kept in a row is decided by r2/objects/body-policy.ts alone; the " +
        "embedded small-body store (core/content/db-small-store.ts) is built by r2/service.ts with that policy's " +
        "size, and no other R2 file reads core's default.",
      severity: "error",
      from: { path: "^src/r2/", pathNot: [TEST_CODE, "^src/r2/service\\.ts$"] },
      to: { path: "^src/core/content/db-small-store\\.ts$" },
    },
    {
      name: "production-imports-no-test-code",
      comment:
        "The package leaves testing/ folders, *.test.js and *.contract.js out (package.json `files`): production " +
        "code importing them would break the installed program.",
      severity: "error",
      from: { pathNot: TEST_CODE },
      to: { path: TEST_CODE },
    },
  ],
  options: {
    // A *.test.ts is not read for its imports: no rule binds them, and parsing them is a quarter of the time.
    doNotFollow: { path: ["node_modules", "\\.test\\.ts$"] },
    skipAnalysisNotInRules: true,
    exclude: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
  },
};

/** A known violation of `rule` by the import of `to` in `from`, with the issue item that removes it. */
const known = (rule, from, to, comment) => ({ type: "dependency", rule: { name: rule, severity: "error" }, from, to, comment });

/**
 * Today's violations, each removed by the issue item named in its comment. The check treats them as known and
 * fails on any other; when a change removes one, delete its entry here (the check says so).
 * @type {import("dependency-cruiser").IViolation[]}
 */
export const knownViolations = [];
