import assert from "node:assert/strict";
import { test } from "node:test";
import type { ProjectConfig } from "../../core/cli/config-file.js";
import { CONFIG_KEYS, unsupportedSections } from "./config-sections.js";

const config = (top: Record<string, unknown>, env?: { name: string; table: Record<string, unknown> }): ProjectConfig => ({
  path: "/p/wrangler.toml",
  env: env?.name,
  compatibility_flags: [],
  vars: {},
  kv_namespaces: [],
  d1_databases: [],
  r2_buckets: [],
  raw: { top: env ? { ...top, env: { [env.name]: env.table } } : top, env: env?.table },
});

/** A value of each refused key that turns its feature on, as a config would write it. */
const REFUSED_EXAMPLES: Record<string, unknown> = {
  ai: { binding: "AI" },
  analytics_engine_datasets: [{ binding: "AE" }],
  browser: { binding: "B" },
  hyperdrive: [{ binding: "H", id: "x" }],
  vectorize: [{ binding: "V", index_name: "i" }],
  mtls_certificates: [{ binding: "C", certificate_id: "x" }],
  dispatch_namespaces: [{ binding: "D", namespace: "n" }],
  workflows: [{ binding: "W", name: "w", class_name: "W" }],
  send_email: [{ name: "E" }],
  images: { binding: "I" },
  version_metadata: { binding: "VM" },
  pipelines: [{ binding: "P", pipeline: "p" }],
  logfwdr: { bindings: [{ name: "L", destination: "d" }] },
  constellation: [{ binding: "C", project_id: "p" }],
  cloudchamber: { image: "x" },
  containers: { app: [{ name: "c" }] },
  unsafe: { bindings: [{ name: "U", type: "x" }] },
  placement: { mode: "smart" },
  limits: { cpu_ms: 100 },
  logpush: true,
  tail_consumers: [{ service: "tail" }],
  first_party_worker: true,
  no_bundle: true,
  find_additional_modules: true,
  rules: [{ type: "Text", globs: ["**/*.txt"] }],
  node_compat: true,
  site: { bucket: "./public" },
  legacy_assets: "./public",
  wasm_modules: { W: "a.wasm" },
  text_blobs: { T: "a.txt" },
  data_blobs: { D: "a.bin" },
  pages_build_output_dir: "./dist",
  "kv-namespaces": "x",
  experimental_services: [{ name: "S", service: "s", environment: "production" }],
};

test("every refused key of wrangler 3's config is refused when it turns its feature on, and named as written", () => {
  const refusedKeys = [...CONFIG_KEYS].filter(([, t]) => t.kind === "refused").map(([k]) => k);
  assert.deepEqual(
    refusedKeys.filter((k) => !(k in REFUSED_EXAMPLES)),
    [],
    "each refused key has an example here",
  );
  for (const key of refusedKeys) {
    const found = unsupportedSections(config({ name: "w", [key]: REFUSED_EXAMPLES[key] }));
    assert.equal(found.length, 1, `${key}: ${JSON.stringify(found)}`);
    assert.ok(found[0].includes(key), `${key} is named: ${found[0]}`);
  }
  assert.deepEqual(unsupportedSections(config({ hyperdrive: REFUSED_EXAMPLES.hyperdrive })), ["[[hyperdrive]]: Hyperdrive"]);
  const durableObjects = { bindings: [{ name: "DO", class_name: "Counter" }] };
  assert.deepEqual(unsupportedSections(config({ durable_objects: durableObjects, migrations: [{ tag: "v1", new_classes: ["Counter"] }] })), []);
  assert.deepEqual(unsupportedSections(config({ d1_databases: [{ binding: "DB", database_name: "db", database_id: "x" }] })), []);
  assert.deepEqual(unsupportedSections(config({ queues: { producers: [{ binding: "Q", queue: "q" }], consumers: [{ queue: "q" }] } })), []);
  assert.deepEqual(unsupportedSections(config({ assets: { directory: "./public", binding: "ASSETS" } })), []);
  assert.deepEqual(unsupportedSections(config({ routes: ["a.example/*"], workers_dev: true })), []);
});

test("a key wrangler 3 does not have is refused too (it may change what runs)", () => {
  assert.deepEqual(unsupportedSections(config({ name: "w", secrets_store_secrets: [{ binding: "S" }] })), [
    "[[secrets_store_secrets]]: not a wrangler 3 config key this platform knows",
  ]);
});

test("[[d1_databases]] is read by deploy, not refused", () => {
  assert.equal(CONFIG_KEYS.get("d1_databases")?.kind, "read");
  assert.deepEqual(unsupportedSections(config({ name: "w", d1_databases: [{ binding: "DB", database_name: "db", database_id: "x" }] })), []);
});

test("[[services]] is read by deploy, not refused", () => {
  assert.equal(CONFIG_KEYS.get("services")?.kind, "read");
  assert.deepEqual(unsupportedSections(config({ name: "w", services: [{ binding: "S", service: "other" }] })), []);
});

test("keys that change nothing here, and refused features written empty or off, are accepted", () => {
  const ok = config({
    name: "w",
    main: "src/index.ts",
    account_id: "a",
    compatibility_date: "2024-09-01",
    compatibility_flags: ["nodejs_compat"],
    workers_dev: false,
    preview_urls: true,
    usage_model: "bundled",
    upload_source_maps: true,
    keep_vars: true,
    send_metrics: false,
    legacy_env: true,
    dev: { port: 8787 },
    vars: { A: "b" },
    kv_namespaces: [],
    r2_buckets: [],
    build: { command: "true" },
    define: { X: "1" },
    minify: true,
    routes: [],
    d1_databases: [],
    durable_objects: { bindings: [] },
    queues: { producers: [], consumers: [] },
    observability: { enabled: false, logs: { enabled: false } },
    placement: { mode: "off" },
    logpush: false,
    node_compat: false,
    tail_consumers: [],
  });
  assert.deepEqual(unsupportedSections(ok), []);
});

test("with --env, the environment's own sections count, inherited top-level ones too, non-inherited top-level ones not", () => {
  const cfg = config({ name: "w", hyperdrive: REFUSED_EXAMPLES.hyperdrive, logpush: true }, { name: "staging", table: { ai: REFUSED_EXAMPLES.ai } });
  assert.deepEqual(unsupportedSections(cfg).sort(), ["[env.staging.ai]: Workers AI", "logpush: Logpush"]);
});
