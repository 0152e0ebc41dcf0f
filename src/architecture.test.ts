import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { cruise, type IConfiguration, type ICruiseResult, type IViolation } from "dependency-cruiser";
import { withTempDir } from "./core/testing/temp-dir.js";

// The import rules of docs/ARCHITECTURE.md ("Who may import whom") live in .dependency-cruiser.mjs at the
// repository's root, with today's known violations; this file runs them on src/.
const root = new URL("..", import.meta.url).pathname;
const rules = (await import(new URL("../.dependency-cruiser.mjs", import.meta.url).href)) as {
  default: IConfiguration;
  knownViolations: IViolation[];
};

async function cruiseTree(baseDir: string, knownViolations: IViolation[]): Promise<ICruiseResult> {
  const { forbidden, options } = rules.default;
  // Paths absolute: the test runner may start anywhere.
  const tsConfig = { fileName: join(baseDir, "tsconfig.json") };
  const { output } = await cruise(["src"], { ...options, baseDir, tsConfig, validate: true, ruleSet: { forbidden }, knownViolations });
  return output as ICruiseResult;
}

/** One line per violation; a cycle is named by its modules, whichever of them it was found from. */
const describe = (v: IViolation) =>
  v.cycle ? `${v.rule.name}: ${[...new Set([v.from, ...v.cycle.map((c) => c.name)])].sort().join(" <-> ")}` : `${v.rule.name}: ${v.from} -> ${v.to}`;
const sameViolation = (a: IViolation, b: IViolation) => a.rule.name === b.rule.name && a.from === b.from && a.to === b.to;

test("src/ keeps the import rules: no new violation, and every known one still exists", async (t) => {
  const started = performance.now();
  const result = await cruiseTree(root, rules.knownViolations);
  t.diagnostic(`dependency-cruiser checked ${result.summary.totalCruised} modules in ${Math.round(performance.now() - started)} ms`);

  const found = result.summary.violations;
  const newOnes = found.filter((v) => v.rule.severity !== "ignore");
  assert.deepEqual(
    newOnes.map(describe),
    [],
    'imports that break the rules of docs/ARCHITECTURE.md ("Who may import whom"); import through what src/platform.ts hands over instead',
  );
  const gone = rules.knownViolations.filter((known) => !found.some((v) => sameViolation(v, known)));
  assert.deepEqual(gone.map(describe), [], "known violations that no longer occur: delete their entries from .dependency-cruiser.mjs");
});

test("each import rule catches the import it forbids", async () => {
  await withTempDir("edge-architecture-", async (dir) => {
    const files: Record<string, string> = {
      "src/platform.ts": `import { createKvService } from "./kv/service.js";\nexport const services = [createKvService];\n`,
      // core-imports-no-area
      "src/core/http/app.ts": `import { kvLimit } from "../../kv/config.js";\nexport const app = kvLimit;\n`,
      "src/core/http/app.test.ts": `import { kvLimit } from "../../kv/config.js";\nexport const fine = kvLimit;\n`,
      "src/kv/config.ts": `export const kvLimit = 1;\n`,
      "src/kv/store.ts": `export interface KvStore { get(): Promise<string> }\nexport const openKvStore = () => 1;\n`,
      "src/kv/service.ts": `export type KvService = { size: number };\nexport const createKvService = () => ({ size: 1 });\n`,
      "src/kv/testing/helpers.ts": `export const helper = 1;\n`,
      // no-other-area-store, no-other-area-internals, other-area-service-type-only
      "src/r2/store.ts": `import { openKvStore } from "../kv/store.js";\nexport const r2 = openKvStore;\n`,
      "src/r2/limits.ts": `import { kvLimit } from "../kv/config.js";\nexport const r2Limit = kvLimit;\n`,
      "src/r2/service.ts": `import { createKvService, type KvService } from "../kv/service.js";\nexport type R2 = KvService;\nexport const make = createKvService;\n`,
      "src/r2/binding.ts": `import type { KvService } from "../kv/service.js";\nexport type Fine = KvService;\n`,
      // cli-imports-no-other-area (a type import of a service, which other rules let through)
      "src/kv/cli/namespaces.ts": `import type { R2 } from "../../r2/service.js";\nexport type Fine = R2;\n`,
      // production-imports-no-test-code
      "src/r2/routes.ts": `import { helper } from "../kv/testing/helpers.js";\nexport const routes = helper;\n`,
      // no-value-cycles (and a type-only loop, which is fine)
      "src/d1/a.ts": `import { b } from "./b.js";\nexport const a = () => b;\n`,
      "src/d1/b.ts": `import { a } from "./a.js";\nexport const b = () => a;\n`,
      "src/d1/c.ts": `import type { D } from "./d.js";\nexport type C = { d?: D };\nexport const c = 1;\n`,
      "src/d1/d.ts": `import type { C } from "./c.js";\nexport type D = { c?: C };\nexport const d = 1;\n`,
      // the DNS layers: zones < nameserver < dnssec, transfers (apart) < server; type imports count, tests do not
      "src/dns/zones/zone-service.ts": `import { answer } from "../nameserver/answer.js";\nexport const zones = answer;\n`,
      "src/dns/nameserver/answer.ts": `import { sign } from "../dnssec/online.js";\nexport const answer = sign;\n`,
      "src/dns/nameserver/answer.test.ts": `import { sign } from "../dnssec/online.js";\nexport const fine = sign;\n`,
      "src/dns/dnssec/online.ts": `import { keys } from "./keys.js";\nimport { journal } from "../transfers/journal.js";\nexport const sign = [keys, journal];\n`,
      "src/dns/dnssec/keys.ts": `export const keys = 1;\n`,
      "src/dns/transfers/journal.ts": `import { server } from "../server/server.js";\nexport const journal = server;\n`,
      "src/dns/server/server.ts": `import type { Journal } from "../transfers/journal.js";\nimport type { Answer } from "../nameserver/answer.js";\nexport type S = [Journal, Answer];\nexport const server = 1;\n`,
      "tsconfig.json": JSON.stringify({ compilerOptions: { module: "NodeNext", moduleResolution: "NodeNext", strict: true }, include: ["src/**/*.ts"] }),
    };
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, path)), { recursive: true });
      writeFileSync(join(dir, path), text);
    }
    const result = await cruiseTree(dir, []);
    const found = [...new Set(result.summary.violations.map(describe))].sort();
    assert.deepEqual(found, [
      "cli-imports-no-other-area: src/kv/cli/namespaces.ts -> src/r2/service.ts",
      "core-imports-no-area: src/core/http/app.ts -> src/kv/config.ts",
      "dns-dnssec-and-transfers-apart: src/dns/dnssec/online.ts -> src/dns/transfers/journal.ts",
      "dns-dnssec-and-transfers-apart: src/dns/transfers/journal.ts -> src/dns/server/server.ts",
      "dns-nameserver-imports-no-layer-above: src/dns/nameserver/answer.ts -> src/dns/dnssec/online.ts",
      "dns-server-is-transport: src/dns/server/server.ts -> src/dns/transfers/journal.ts",
      "dns-zones-import-no-layer-above: src/dns/zones/zone-service.ts -> src/dns/nameserver/answer.ts",
      "no-other-area-internals: src/r2/limits.ts -> src/kv/config.ts",
      "no-other-area-internals: src/r2/routes.ts -> src/kv/testing/helpers.ts",
      "no-other-area-store: src/r2/store.ts -> src/kv/store.ts",
      "no-value-cycles: src/d1/a.ts <-> src/d1/b.ts",
      "other-area-service-type-only: src/r2/service.ts -> src/kv/service.ts",
      "production-imports-no-test-code: src/r2/routes.ts -> src/kv/testing/helpers.ts",
    ]);
  });
});
