import assert from "node:assert/strict";
import { test } from "node:test";
import { BracketedFieldError, BracketLimits, metadataFromBracketedFields } from "./form-metadata.js";
import { moduleKind } from "./upload.js";

test("module content types map to workerd module kinds", () => {
  assert.equal(moduleKind("application/javascript+module"), "esModule");
  assert.equal(moduleKind("application/javascript+module; charset=utf-8"), "esModule");
  assert.equal(moduleKind("application/wasm"), "wasm");
  assert.equal(moduleKind("text/plain"), "text");
  assert.equal(moduleKind("application/source-map"), "skip");
  assert.equal(moduleKind("image/png"), undefined);
});

test("bracketed metadata fields (the TypeScript SDK's form encoding) rebuild the metadata object", () => {
  const fields = [
    ["metadata[main_module]", "worker.js"],
    ["metadata[bindings][][type]", "plain_text"],
    ["metadata[bindings][][name]", "MODE"],
    ["metadata[bindings][][type]", "r2_bucket"],
    ["metadata[bindings][][name]", "B"],
    ["metadata[bindings][][service][name]", "svc"],
    ["metadata[bindings][][service][environment]", "production"],
    ["metadata[compatibility_flags][]", "nodejs_compat"],
    ["metadata[compatibility_flags][]", "other"],
    ["metadata[keep_bindings][0]", "secret_text"],
  ].map(([name, value]) => ({ name, value }));
  assert.deepEqual(JSON.parse(JSON.stringify(metadataFromBracketedFields(fields))), {
    main_module: "worker.js",
    bindings: [
      { type: "plain_text", name: "MODE" },
      { type: "r2_bucket", name: "B", service: { name: "svc", environment: "production" } },
    ],
    compatibility_flags: ["nodejs_compat", "other"],
    keep_bindings: ["secret_text"],
  });
});

test("bracketed metadata refuses prototype keys in any segment, malformed names, repeats and depth or indexes past the bounds", () => {
  const refused = (...names: string[]) =>
    assert.throws(() => metadataFromBracketedFields(names.map((name) => ({ name, value: "60" }))), BracketedFieldError, names.join(", "));
  for (const key of ["__proto__", "constructor", "prototype"]) {
    refused(`metadata[${key}][expiration_ttl]`);
    refused(`metadata[bindings][][${key}]`);
    refused(`metadata[a][b][${key}]`);
  }
  refused("metadata");
  refused("metadata[a]junk");
  refused("metadata[a][b");
  refused("metadata[a]", "metadata[a]");
  refused(`metadata${"[a]".repeat(BracketLimits.depth + 1)}`);
  refused(`metadata[flags][${BracketLimits.arrayLength + 1}]`);
  assert.equal(({} as Record<string, unknown>).expiration_ttl, undefined);
});
