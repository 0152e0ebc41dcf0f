import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { createAccount, PROTOTYPE_KEYS, sendForm } from "../../core/testing/hostile.js";
import type { TestPlatform } from "../../core/testing/platform.js";
import { hit, startPlatform } from "../testing/helpers.js";

let p: TestPlatform;
let other: string;
before(async () => {
  p = await startPlatform();
  other = await createAccount(p, "Bystander");
});
after(() => p?.dispose());

const code = `export default { fetch(req, env) { return new Response(String(env.GREETING)); } };`;
const scriptPath = (name: string, accountId = p.accountId) => `/accounts/${accountId}/workers/scripts/${name}`;

/** A script upload with the metadata as bracketed fields (the TypeScript SDK's encoding) plus `extra` fields. */
function bracketedUpload(extra: [string, string][]): FormData {
  const form = new FormData();
  form.append("metadata[main_module]", "index.js");
  for (const [k, v] of extra) form.append(k, v);
  form.append("index.js", new Blob([code], { type: "application/javascript+module" }), "index.js");
  return form;
}

test("a bracketed metadata field naming __proto__ is refused and pollutes nothing: KV and DNS in another account are untouched", async () => {
  // The exploit from the security pass: one upload, then writes in another account picked up the values.
  const attempts = [
    ["metadata[__proto__][expiration_ttl]", "60"],
    ["metadata[__proto__][comment]", "polluted"],
    ["metadata[bindings][__proto__][comment]", "polluted"],
    ["metadata[constructor][prototype][comment]", "polluted"],
    ["metadata[prototype][comment]", "polluted"],
  ] as const;
  for (const [field, value] of attempts) {
    const r = await sendForm(p, "PUT", scriptPath("polluter"), bracketedUpload([[field, value]]));
    assert.equal(r.status, 400, `${field}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.success, false);
    assert.equal(r.body.errors[0].code, 10021);
    assert.match(r.body.errors[0].message, /__proto__|constructor|prototype/);
  }
  assert.equal((await p.api("GET", scriptPath("polluter"))).status, 404, "nothing was stored");

  const ns = (await p.api("POST", `/accounts/${other}/storage/kv/namespaces`, { title: "victim" }, p.keyHeaders())).body.result.id as string;
  const kv = `/accounts/${other}/storage/kv/namespaces/${ns}`;
  const put = await fetch(`${p.apiUrl}${kv}/values/single`, { method: "PUT", headers: p.keyHeaders(), body: "v" });
  assert.equal(put.status, 200);
  const bulk = await p.api("PUT", `${kv}/bulk`, [{ key: "bulk", value: "v" }], p.keyHeaders());
  assert.equal(bulk.status, 200, JSON.stringify(bulk.body));
  const keys = (await p.api("GET", `${kv}/keys`, undefined, p.keyHeaders())).body.result as { name: string; expiration?: number }[];
  assert.deepEqual(
    keys.map((k) => [k.name, k.expiration]),
    [
      ["bulk", undefined],
      ["single", undefined],
    ],
  );

  const zone = await p.api("POST", "/zones", { name: "victim.example", account: { id: other } }, p.keyHeaders());
  assert.equal(zone.status, 200, JSON.stringify(zone.body));
  const record = await p.api("POST", `/zones/${zone.body.result.id}/dns_records`, { type: "A", name: "www", content: "192.0.2.1" }, p.keyHeaders());
  assert.equal(record.status, 200, JSON.stringify(record.body));
  assert.equal(record.body.result.comment, null);
});

test("bracketed metadata: every segment naming __proto__, constructor or prototype is a 400; such names as values are fine", async () => {
  for (const name of PROTOTYPE_KEYS) {
    for (const field of [`metadata[${name}]`, `metadata[bindings][][${name}]`, `metadata[compatibility_flags][${name}]`, `metadata[${name}][]`]) {
      const r = await sendForm(p, "PUT", scriptPath("named"), bracketedUpload([[field, "x"]]));
      assert.equal(r.status, 400, `${field}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.errors[0].code, 10021);
    }
  }
  // The names as data (a binding's text) are just text.
  const ok = await sendForm(
    p,
    "PUT",
    scriptPath("named"),
    bracketedUpload([
      ["metadata[bindings][][type]", "plain_text"],
      ["metadata[bindings][][name]", "GREETING"],
      ["metadata[bindings][][text]", "__proto__"],
    ]),
  );
  assert.equal(ok.status, 200, JSON.stringify(ok.body));
  assert.equal((await hit(p, "named", "/")).text, "__proto__");
});

test("bracketed metadata beyond the parser's bounds (depth, array index, duplicate field) is a 400", async () => {
  const cases: [string, [string, string][]][] = [
    ["too deep", [["metadata[a][b][c][d][e][f][g][h][i]", "x"]]],
    ["array index past the limit", [["metadata[compatibility_flags][5000]", "x"]]],
    [
      "the same field twice",
      [
        ["metadata[compatibility_date]", "2024-09-01"],
        ["metadata[compatibility_date]", "2024-09-02"],
      ],
    ],
  ];
  for (const [what, fields] of cases) {
    const r = await sendForm(p, "PUT", scriptPath("bounded"), bracketedUpload(fields));
    assert.equal(r.status, 400, `${what}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.errors[0].code, 10021, what);
  }
});

test("metadata sent as curl sends it (a JSON field or a JSON file part, as in the hosted API's examples) is accepted", async () => {
  const dir = mkdtempSync(join(tmpdir(), "curl-upload-"));
  try {
    writeFileSync(join(dir, "index.js"), code);
    const meta = JSON.stringify({ main_module: "index.js", bindings: [{ type: "plain_text", name: "GREETING", text: "from curl" }] });
    writeFileSync(join(dir, "metadata.json"), meta);
    const curl = (name: string, metadataArg: string) =>
      promisify(execFile)(
        "curl",
        [
          "-sS",
          "-X",
          "PUT",
          `${p.apiUrl}${scriptPath(name)}`,
          "-H",
          `Authorization: Bearer ${p.token}`,
          "-F",
          metadataArg,
          "-F",
          "index.js=@index.js;type=application/javascript+module",
        ],
        { cwd: dir },
      );
    for (const [name, arg] of [
      ["curl-field", `metadata=${meta};type=application/json`],
      ["curl-file", "metadata=@metadata.json;type=application/json"],
    ]) {
      const { stdout } = await curl(name, arg);
      const body = JSON.parse(stdout);
      assert.equal(body.success, true, `${arg}: ${stdout}`);
      assert.equal((await hit(p, name, "/")).text, "from curl");
    }
    // A JSON field that is not JSON is a 400 in the envelope, not the multipart plugin's own error.
    const { stdout } = await curl("curl-broken", "metadata={not json;type=application/json");
    const broken = JSON.parse(stdout);
    assert.equal(broken.success, false);
    assert.equal(broken.errors[0].code, 10021);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
