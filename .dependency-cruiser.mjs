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
export const knownViolations = [
  // core/testing/api-surface.ts reads DNS transfer error codes to list every code of the API.
  known(
    "core-imports-no-area",
    "src/core/testing/api-surface.ts",
    "src/dns/transfers/errors.ts",
    "issue 32 item 4: each area hands its codes over instead of core reaching into dns/",
  ),
  // The test helper src/dns/dnssec/testing.ts is not in a testing/ folder, so the package ships it.
  known(
    "production-imports-no-test-code",
    "src/dns/dnssec/testing.ts",
    "src/core/testing/platform.ts",
    "issue 32 item 3: the DNS split moves dnssec/testing.ts into a testing/ folder",
  ),
  known(
    "production-imports-no-test-code",
    "src/dns/dnssec/testing.ts",
    "src/dns/testing/helpers.ts",
    "issue 32 item 3: the DNS split moves dnssec/testing.ts into a testing/ folder",
  ),
  // Queues' deploy configuration and workers' deploy command import each other's CLI files.
  known(
    "no-other-area-internals",
    "src/queues/cli/deploy-config.ts",
    "src/workers/bindings/queue.ts",
    "issue 32 item 4: the CLI section registry breaks the workers <-> queues deploy cycle",
  ),
  known(
    "no-other-area-internals",
    "src/queues/cli/deploy-config.ts",
    "src/workers/cli/config-sections.ts",
    "issue 32 item 4: the CLI section registry breaks the workers <-> queues deploy cycle",
  ),
  known(
    "no-other-area-internals",
    "src/workers/cli/deploy.ts",
    "src/queues/cli/deploy-config.ts",
    "issue 32 item 4: the CLI section registry breaks the workers <-> queues deploy cycle",
  ),
  // R2's notification command looks a queue up with Queues' CLI helper.
  known(
    "no-other-area-internals",
    "src/r2/cli/notification.ts",
    "src/queues/cli/consumers.ts",
    "issue 32 item 4: shared CLI helpers move to core/cli (as printTable did)",
  ),
  // Workers and the edge's certificates build DNS rows by hand (DNS-01 records, Custom Domains' records).
  known(
    "no-other-area-internals",
    "src/edge/certificates/dns-01.ts",
    "src/dns/model.ts",
    "issue 32 item 4: one managed-record factory in dns/ used by workers",
  ),
  known(
    "no-other-area-internals",
    "src/edge/certificates/dns-01.ts",
    "src/dns/zones/zone-service.ts",
    "issue 32 item 4: one managed-record factory in dns/ used by workers",
  ),
  known(
    "no-other-area-internals",
    "src/edge/certificates/dns-01.ts",
    "src/dns/zones/zone-state.ts",
    "issue 32 item 4: one managed-record factory in dns/ used by workers",
  ),
  known(
    "no-other-area-internals",
    "src/workers/routes/dns-records.ts",
    "src/dns/model.ts",
    "issue 32 item 4: one managed-record factory in dns/ used by workers",
  ),
  known(
    "no-other-area-internals",
    "src/workers/routes/dns-records.ts",
    "src/dns/zones/zone-service.ts",
    "issue 32 item 4: one managed-record factory in dns/ used by workers",
  ),
  known(
    "no-other-area-internals",
    "src/workers/routes/dns-records.ts",
    "src/dns/zones/zone-state.ts",
    "issue 32 item 4: one managed-record factory in dns/ used by workers",
  ),
  known(
    "no-other-area-internals",
    "src/edge/certificates/edge-tls.ts",
    "src/dns/zones/zone-service.ts",
    "issue 32 item 1: the certificates read zones through a port platform.ts hands over",
  ),
  known(
    "no-other-area-internals",
    "src/workers/service.ts",
    "src/dns/zones/zone-service.ts",
    "issue 32 item 1: workers/service.ts becomes wiring; DNS hands over a zones port typed in dns/service.ts",
  ),
  known(
    "no-other-area-internals",
    "src/workers/routes/api.ts",
    "src/dns/errors.ts",
    "issue 32 item 1: the zones port workers is handed answers zone-not-found itself",
  ),
  // Workers' queue binding and consumer dispatch use Queues' errors, store rows and delivery outcomes.
  known(
    "no-other-area-internals",
    "src/workers/bindings/queue.ts",
    "src/queues/errors.ts",
    "issue 32 item 4: each area renders its own wire format (Queues its binding errors)",
  ),
  known(
    "no-other-area-store",
    "src/workers/runtime/queue-dispatch.ts",
    "src/queues/store.ts",
    "issue 32 item 1: Queues hands workers a consumer port instead of its store's rows",
  ),
  known(
    "no-other-area-internals",
    "src/workers/runtime/queue-dispatch.ts",
    "src/queues/delivery.ts",
    "issue 32 item 1: Queues hands workers a consumer port instead of its store's rows",
  ),
  known(
    "no-other-area-store",
    "src/workers/runtime/script-runtime.ts",
    "src/queues/store.ts",
    "issue 32 item 1: Queues hands workers a consumer port instead of its store's rows",
  ),
  known(
    "no-other-area-internals",
    "src/workers/runtime/script-runtime.ts",
    "src/queues/delivery.ts",
    "issue 32 item 1: Queues hands workers a consumer port instead of its store's rows",
  ),
];
