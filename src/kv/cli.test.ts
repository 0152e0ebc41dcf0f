import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startTestPlatform, type CliResult, type TestPlatform } from "../core/testing/platform.js";
import { runOnTerminal, terminalAvailable } from "../core/testing/terminal.js";

let p: TestPlatform;
let work: string;
let base: string;
/** Namespaces made through the CLI, bound in the project's edge.toml. */
let prodId: string;
let previewId: string;
let stagingId: string;

const kv = (args: string[], opts: { input?: string; env?: NodeJS.ProcessEnv; cwd?: string } = {}) => p.cli(["kv", ...args], { cwd: work, ...opts });
const file = (name: string, content: string | Buffer) => {
  const path = join(work, name);
  writeFileSync(path, content);
  return path;
};
const idFrom = (r: CliResult) => /(?:preview_)?id = "([0-9a-f]{32})"/.exec(r.stdout)?.[1] ?? assert.fail(`no id in:\n${r.stdout}\n${r.stderr}`);
const ok = (r: CliResult) => {
  assert.equal(r.code, 0, `exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  return r;
};
const fails = (r: CliResult, pattern: RegExp) => {
  assert.equal(r.code, 1, `expected failure, got 0\nstdout: ${r.stdout}`);
  assert.match(r.stderr, pattern);
  return r;
};
const now = () => Math.floor(Date.now() / 1000);
const apiValue = async (ns: string, key: string) => {
  const res = await fetch(`${p.apiUrl}${base}/${ns}/values/${encodeURIComponent(key)}`, { headers: p.headers() });
  return res.status === 200 ? Buffer.from(await res.arrayBuffer()) : null;
};

before(async () => {
  p = await startTestPlatform();
  base = `/accounts/${p.accountId}/storage/kv/namespaces`;
  work = mkdtempSync(join(tmpdir(), "kv-cli-"));
  file("edge.toml", 'name = "proj"\nmain = "index.js"\n[env.staging]\n');
  prodId = idFrom(ok(await kv(["namespace", "create", "CACHE"])));
  previewId = idFrom(ok(await kv(["namespace", "create", "CACHE", "--preview"])));
  stagingId = idFrom(ok(await kv(["namespace", "create", "CACHE", "--env", "staging"])));
  file(
    "edge.toml",
    [
      'name = "proj"',
      'main = "index.js"',
      `kv_namespaces = [{ binding = "CACHE", id = "${prodId}", preview_id = "${previewId}" }, { binding = "ONLY_PREVIEW", preview_id = "${previewId}" }, { binding = "PROD", id = "${prodId}" }]`,
      "[env.staging]",
      `kv_namespaces = [{ binding = "CACHE", id = "${stagingId}" }]`,
      "[env.empty]",
      'name = "x"',
    ].join("\n"),
  );
});
after(async () => {
  await p?.dispose();
  if (work) rmSync(work, { recursive: true, force: true });
});

test("namespace create: titles from config name, --env, --preview; snippet; duplicate is an error", async () => {
  const all = JSON.parse(ok(await kv(["namespace", "list"])).stdout) as { id: string; title: string }[];
  const title = (id: string) => all.find((n) => n.id === id)?.title;
  assert.equal(title(prodId), "proj-CACHE");
  assert.equal(title(previewId), "proj-CACHE_preview");
  assert.equal(title(stagingId), "proj-staging-CACHE");

  const noConfig = mkdtempSync(join(tmpdir(), "kv-cli-bare-"));
  const bare = ok(await kv(["namespace", "create", "my-ns"], { cwd: noConfig }));
  rmSync(noConfig, { recursive: true, force: true });
  assert.match(bare.stderr, /No configured name present, using `worker` as a prefix/);
  assert.match(bare.stdout, /Creating namespace with title "worker-my-ns"/);
  assert.match(bare.stdout, /\[\[kv_namespaces\]\]\nbinding = "my_ns"\nid = "[0-9a-f]{32}"/);

  const env = ok(await kv(["namespace", "create", "SESS", "--env", "staging", "--preview"]));
  assert.match(env.stdout, /title "proj-staging-SESS_preview"/);
  assert.match(env.stdout, /\[\[env\.staging\.kv_namespaces\]\]\nbinding = "SESS"\npreview_id = "[0-9a-f]{32}"/);
  fails(await kv(["namespace", "create", "CACHE"]), /already exists \[code: 10014\]/);
  fails(await kv(["namespace", "create"]), /Not enough non-option arguments/);
});

test("namespace list pages through every namespace", async () => {
  for (let i = 0; i < 105; i++) await p.api("POST", base, { title: `bulk-ns-${String(i).padStart(3, "0")}` });
  const all = JSON.parse(ok(await kv(["namespace", "list"])).stdout) as { id: string; title: string }[];
  assert.equal(all.filter((n) => n.title.startsWith("bulk-ns-")).length, 105);
  assert.deepEqual(Object.keys(all[0]!).sort(), ["id", "title"]);
});

test("selectors: exactly one of --binding/--namespace-id; bindings from config, --env and --preview", async () => {
  fails(await kv(["key", "put", "k", "v"]), /Exactly one of the arguments binding and namespace-id is required/);
  fails(await kv(["key", "put", "k", "v", "--binding", "CACHE", "--namespace-id", prodId]), /mutually exclusive/);
  fails(await kv(["key", "put", "k", "v", "--binding", "NOPE"]), /binding name "NOPE" was not found/);
  // CACHE has both ids: a write must say which.
  fails(await kv(["key", "put", "k", "v", "--binding", "CACHE"]), /has both a namespace ID and a preview ID/);
  fails(await kv(["key", "put", "k", "v", "--binding", "PROD", "--preview"]), /No preview ID found for PROD/);
  fails(await kv(["key", "put", "k", "v", "--binding", "CACHE", "--env", "empty"]), /No KV namespaces are configured/);
  fails(await kv(["key", "put", "k", "v", "--binding", "CACHE", "--env", "nowhere"]), /no \[env\.nowhere\] section/);
  const bare = mkdtempSync(join(tmpdir(), "kv-cli-bare-"));
  fails(await kv(["key", "put", "k", "v", "--binding", "CACHE"], { cwd: bare }), /Failed to find a config file/);
  rmSync(bare, { recursive: true, force: true });

  ok(await kv(["key", "put", "where", "prod", "--binding", "CACHE", "--preview", "false"]));
  ok(await kv(["key", "put", "where", "preview", "--binding", "CACHE", "--preview"]));
  ok(await kv(["key", "put", "where", "staging", "--binding", "CACHE", "--env", "staging"]));
  ok(await kv(["key", "put", "where", "only-preview", "--binding", "ONLY_PREVIEW"]));
  assert.equal((await apiValue(prodId, "where"))?.toString(), "prod");
  assert.equal((await apiValue(previewId, "where"))?.toString(), "only-preview");
  assert.equal((await apiValue(stagingId, "where"))?.toString(), "staging");
  // Reads default to the production namespace, as wrangler 3 does.
  assert.equal(ok(await kv(["key", "get", "where", "--binding", "CACHE"])).stdout, "prod");
  assert.equal(ok(await kv(["key", "get", "where", "--binding", "CACHE", "--preview"])).stdout, "only-preview");
});

test("key put/get: values, --path binary byte for byte, --text, writing message", async () => {
  const put = ok(await kv(["key", "put", "greeting", "héllo", "--namespace-id", prodId]));
  assert.equal(put.stdout, `Writing the value "héllo" to key "greeting" on namespace id: "${prodId}".\n`);
  const raw = ok(await kv(["key", "get", "greeting", "--namespace-id", prodId]));
  assert.equal(raw.stdout, "héllo");
  assert.equal(ok(await kv(["key", "get", "greeting", "--namespace-id", prodId, "--text"])).stdout, "héllo\n");

  const bytes = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 7) % 256));
  const path = file("blob.bin", bytes);
  const fromFile = ok(await kv(["key", "put", "blob", "--path", path, "--binding", "PROD"]));
  assert.match(fromFile.stdout, /Writing the contents of .*blob\.bin to the key "blob" on namespace binding: "PROD"/);
  assert.deepEqual(ok(await kv(["key", "get", "blob", "--binding", "PROD"])).stdoutBytes, bytes);
  assert.deepEqual(await apiValue(prodId, "blob"), bytes);

  fails(await kv(["key", "put", "k", "--namespace-id", prodId]), /Exactly one of the arguments value and path is required/);
  fails(await kv(["key", "put", "k", "v", "--path", path, "--namespace-id", prodId]), /Exactly one of the arguments value and path/);
  fails(await kv(["key", "put", "k", "--path", "missing.txt", "--namespace-id", prodId]), /Could not read file: missing\.txt\n\s+ENOENT/);
  fails(await kv(["key", "get", "nope", "--namespace-id", prodId]), /Value not found: the key "nope" does not exist/);
  fails(await kv(["key", "get", "x", "--namespace-id", "0".repeat(32)]), /namespace not found \[code: 10013\]/);
});

test("key put: --ttl, --expiration (ttl wins), --metadata; key list shows ISO expiration and metadata", async () => {
  const exp = now() + 3600;
  ok(await kv(["key", "put", "meta/a", "1", "--namespace-id", prodId, "--expiration", String(exp), "--metadata", '{"v":1,"t":"ü"}']));
  const beforePut = now();
  ok(await kv(["key", "put", "meta/b", "2", "--namespace-id", prodId, "--ttl", "120", "--expiration", "1000"]));
  const afterPut = now();
  const list = JSON.parse(ok(await kv(["key", "list", "--namespace-id", prodId, "--prefix", "meta/"])).stdout);
  assert.deepEqual(list[0], { name: "meta/a", expiration: new Date(exp * 1000).toISOString(), metadata: { v: 1, t: "ü" } });
  assert.equal(list[1].name, "meta/b");
  const bExp = Date.parse(list[1].expiration) / 1000;
  // 120 s from when the server took the put, whenever that was on a busy machine (seconds are whole).
  assert.ok(bExp >= beforePut + 119 && bExp <= afterPut + 121, `ttl should win: ${list[1].expiration}`);
  assert.equal(list.length, 2);
});

test("key put validation fails with exit 1 before anything is written", async () => {
  const id = ["--namespace-id", prodId];
  fails(await kv(["key", "put", "bad", "v", ...id, "--ttl", "59"]), /expiration_ttl of 59 is below the minimum of 60 seconds/);
  fails(await kv(["key", "put", "bad", "v", ...id, "--expiration", "1000"]), /expiration 1000 is in the past/);
  fails(await kv(["key", "put", "bad", "v", ...id, "--metadata", "{oops"]), /--metadata must be valid JSON\. Received: \{oops/);
  fails(await kv(["key", "put", "bad", "v", ...id, "--metadata", "[1]"]), /--metadata must be a JSON object/);
  fails(
    await kv(["key", "put", "bad", "v", ...id, "--metadata", JSON.stringify({ s: "x".repeat(1100) })]),
    /metadata is \d+ bytes serialized, the limit is 1024/,
  );
  fails(await kv(["key", "put", "k".repeat(513), "v", ...id]), /key is 513 bytes long, the limit is 512 bytes/);
  fails(await kv(["key", "put", "bad", "v", ...id, "--ttl", "abc"]), /Invalid value for --ttl/);
  fails(await kv(["key", "put", "bad", "v", ...id, "--persist-to", work]), /--persist-to only applies together with --local/);
  assert.equal(await apiValue(prodId, "bad"), null);
});

test("key delete and key list over many pages (remote and --local)", async () => {
  const entries = Array.from({ length: 1005 }, (_, i) => ({ key: `many/${String(i).padStart(4, "0")}`, value: String(i) }));
  ok(await kv(["bulk", "put", file("many.json", JSON.stringify(entries)), "--namespace-id", prodId]));
  for (const extra of [[], ["--local"]]) {
    const listed = JSON.parse(ok(await kv(["key", "list", "--namespace-id", prodId, "--prefix", "many/", ...extra])).stdout) as { name: string }[];
    assert.deepEqual(
      listed.map((k) => k.name),
      entries.map((e) => e.key),
    );
  }
  const del = ok(await kv(["key", "delete", "many/0000", "--namespace-id", prodId]));
  assert.equal(del.stdout, `Deleting the key "many/0000" on namespace id: "${prodId}".\n`);
  ok(await kv(["key", "delete", "many/0001", "--namespace-id", prodId, "--local"]));
  assert.equal(await apiValue(prodId, "many/0000"), null);
  assert.equal(await apiValue(prodId, "many/0001"), null);
});

test("--local shares the server's state directory both ways; --persist-to uses another", async () => {
  const bytes = Buffer.from([0, 255, 13, 10, 26, 128]);
  ok(await kv(["key", "put", "local-bin", "--path", file("l.bin", bytes), "--namespace-id", prodId, "--local"]));
  assert.deepEqual(await apiValue(prodId, "local-bin"), bytes);
  await fetch(`${p.apiUrl}${base}/${prodId}/values/from-server`, { method: "PUT", body: "served", headers: p.headers() });
  assert.equal(ok(await kv(["key", "get", "from-server", "--binding", "PROD", "--local"])).stdout, "served");

  const elsewhere = mkdtempSync(join(tmpdir(), "kv-persist-"));
  try {
    ok(await kv(["key", "put", "isolated", "yes", "--namespace-id", "my-local-ns", "--local", "--persist-to", elsewhere]));
    assert.equal(ok(await kv(["key", "get", "isolated", "--namespace-id", "my-local-ns", "--local", "--persist-to", elsewhere])).stdout, "yes");
    fails(await kv(["key", "get", "isolated", "--namespace-id", "my-local-ns", "--local"]), /Value not found/);
    fails(
      await kv(["key", "put", "bad", "v", "--namespace-id", "my-local-ns", "--local", "--persist-to", elsewhere, "--ttl", "5"]),
      /KV PUT failed: 400 .*minimum of 60/,
    );
    const listed = JSON.parse(ok(await kv(["key", "list", "--namespace-id", "my-local-ns", "--local", "--persist-to", elsewhere])).stdout);
    assert.deepEqual(listed, [{ name: "isolated" }]);
  } finally {
    rmSync(elsewhere, { recursive: true, force: true });
  }
});

test("bulk put: base64, success line, and an invalid entry in the middle writes nothing (remote and --local)", async () => {
  const good = [
    { key: "bulk/text", value: "plain", metadata: { k: 1 } },
    { key: "bulk/bin", value: Buffer.from([255, 254, 0]).toString("base64"), base64: true, expiration_ttl: 600 },
  ];
  const put = ok(await kv(["bulk", "put", file("good.json", JSON.stringify(good)), "--binding", "PROD"]));
  assert.match(put.stdout, /^Success!/m);
  assert.deepEqual(ok(await kv(["key", "get", "bulk/bin", "--binding", "PROD"])).stdoutBytes, Buffer.from([255, 254, 0]));

  const bad = [
    { key: "atomic/1", value: "a" },
    { key: "atomic/2", value: "b", expiration_ttl: 5 },
    { key: "atomic/3", value: 3 },
    { key: "atomic/4", value: "d" },
  ];
  const path = file("bad.json", JSON.stringify(bad));
  for (const extra of [[], ["--local"]]) {
    const r = fails(await kv(["bulk", "put", path, "--namespace-id", prodId, ...extra]), /2 of 4 entries are invalid, so nothing was written/);
    assert.match(r.stderr, /entry 1: expiration_ttl of 5 is below the minimum/);
    assert.match(r.stderr, /entry 2: value must be a string/);
  }
  const listed = JSON.parse(ok(await kv(["key", "list", "--namespace-id", prodId, "--prefix", "atomic/"])).stdout);
  assert.deepEqual(listed, []);

  fails(await kv(["bulk", "put", file("obj.json", '{"key":"a"}'), "--namespace-id", prodId]), /Expected an array of key-value objects but got type "object"/);
  fails(await kv(["bulk", "put", file("broken.json", "[{"), "--namespace-id", prodId]), /Could not parse ".*broken\.json" as JSON/);
  const warn = ok(await kv(["bulk", "put", file("extra.json", '[{"key":"bulk/x","value":"1","colour":"red"}]'), "--namespace-id", prodId, "--local"]));
  assert.match(warn.stderr, /The item at index 0 contains unexpected properties: \["colour"\]/);
  assert.equal((await apiValue(prodId, "bulk/x"))?.toString(), "1");
});

test("bulk delete: refused without a terminal unless --force, invalid files write nothing", async () => {
  ok(await kv(["bulk", "put", file("del-src.json", JSON.stringify(["d1", "d2", "d3", "d4"].map((key) => ({ key, value: key })))), "--namespace-id", prodId]));
  const refused = fails(await kv(["bulk", "delete", file("del.json", '["d1", {"name": "d2"}]'), "--namespace-id", prodId]), /pass --force \(-f\)/);
  assert.match(refused.stderr, /Are you sure you want to delete all the keys read from ".*del\.json" from kv-namespace with id: "[0-9a-f]{32}"\?/);
  assert.equal((await apiValue(prodId, "d1"))?.toString(), "d1");
  const r = ok(await kv(["bulk", "delete", file("del.json", '["d1", {"name": "d2"}]'), "--namespace-id", prodId, "-f"]));
  assert.match(r.stdout, /Success!/);
  const forced = ok(await kv(["bulk", "delete", file("del2.json", '["d3"]'), "--namespace-id", prodId, "--local", "--force"]));
  assert.doesNotMatch(forced.stdout, /Are you sure/);
  fails(await kv(["bulk", "delete", file("del3.json", '["d4", 5]'), "--namespace-id", prodId]), /The item at index 1 is type: "number"/);
  fails(await kv(["bulk", "delete", file("del4.json", `["d4", "${"k".repeat(600)}"]`), "--namespace-id", prodId]), /entry 1: key is 600 bytes/);
  fails(await kv(["bulk", "delete", file("del5.json", '{"d4":1}'), "--namespace-id", prodId]), /Expected an array of strings/);
  for (const k of ["d1", "d2", "d3"]) assert.equal(await apiValue(prodId, k), null);
  assert.equal((await apiValue(prodId, "d4"))?.toString(), "d4");
});

test("namespace delete: refused without a terminal unless -y, by binding or id", async () => {
  const id = idFrom(ok(await kv(["namespace", "create", "DOOMED"])));
  fails(await kv(["namespace", "delete", "--namespace-id", id]), /delete the KV namespace id: "[0-9a-f]{32}"[^]*pass --skip-confirmation \(-y\)/);
  assert.ok(
    JSON.parse(ok(await kv(["namespace", "list"])).stdout).some((n: { id: string }) => n.id === id),
    "still there after the refusal",
  );
  const r = ok(await kv(["namespace", "delete", "--namespace-id", id, "-y"]));
  assert.match(r.stdout, /Deleted KV namespace id: "[0-9a-f]{32}"\./);
  fails(await kv(["namespace", "delete", "--namespace-id", id, "-y"]), /namespace not found \[code: 10013\]/);
  fails(await kv(["namespace", "delete"]), /Exactly one of the arguments binding and namespace-id/);
  ok(await kv(["namespace", "delete", "--binding", "CACHE", "--env", "staging", "--skip-confirmation"]));
  const all = JSON.parse(ok(await kv(["namespace", "list"])).stdout) as { id: string }[];
  assert.ok(!all.some((n) => n.id === stagingId || n.id === id));
});

test("deprecated kv:namespace, kv:key, kv:bulk work and name the new form on stderr", async () => {
  const list = ok(await p.cli(["kv:namespace", "list"], { cwd: work }));
  assert.match(list.stderr, /`edgecli kv:namespace` command is deprecated.*Please use `edgecli kv namespace`/);
  assert.ok(Array.isArray(JSON.parse(list.stdout)));
  const put = ok(await p.cli(["kv:key", "put", "old", "form", "--namespace-id", prodId], { cwd: work }));
  assert.match(put.stderr, /Please use `edgecli kv key`/);
  assert.equal(ok(await p.cli(["kv:key", "get", "old", "--namespace-id", prodId], { cwd: work })).stdout, "form");
  const bulk = ok(await p.cli(["kv:bulk", "put", file("old.json", '[{"key":"old2","value":"v"}]'), "--namespace-id", prodId, "--local"], { cwd: work }));
  assert.match(bulk.stderr, /Please use `edgecli kv bulk`/);
  assert.equal((await apiValue(prodId, "old2"))?.toString(), "v");
});

test("--help documents every option", async () => {
  const help = ok(await kv(["key", "put", "--help"])).stdout;
  for (const opt of ["--binding", "--namespace-id", "--env", "--preview", "--path", "--ttl", "--expiration", "--metadata", "--local", "--persist-to"]) {
    assert.ok(help.includes(opt), `${opt} missing from help:\n${help}`);
  }
  assert.match(ok(await kv(["bulk", "delete", "--help"])).stdout, /--force/);
  assert.match(ok(await kv(["namespace", "create", "--help"])).stdout, /--preview/);
});

/** Runs edgecli on a pseudo-terminal against the test platform, answering its y/n question; returns the screen. */
async function onTerminal(args: string[], answer?: string): Promise<string> {
  const env = { EDGE_API_URL: p.apiUrl, EDGE_API_TOKEN: p.token, EDGE_ACCOUNT_ID: p.accountId, EDGE_STATE_DIR: p.stateDir };
  const { screen } = await runOnTerminal(args, { cwd: work, env, answers: answer ? [{ prompt: /\(y\/n\)/, text: answer }] : [] });
  return screen;
}

test("on a terminal: declining the confirmations deletes nothing, yes deletes", { skip: !terminalAvailable() && "needs util-linux script" }, async () => {
  const id = idFrom(ok(await kv(["namespace", "create", "TTY"])));
  ok(await kv(["key", "put", "t1", "v", "--namespace-id", id]));
  const keys = file("tty-keys.json", '["t1"]');
  const declinedKeys = await onTerminal(["kv", "bulk", "delete", keys, "--namespace-id", id], "n\r");
  assert.match(declinedKeys, /Not deleting keys read from/);
  assert.equal((await apiValue(id, "t1"))?.toString(), "v");
  const declinedNs = await onTerminal(["kv", "namespace", "delete", "--namespace-id", id], "n\r");
  assert.match(declinedNs, /Not deleting\./);
  assert.equal((await p.api("GET", `${base}/${id}`)).status, 200);
  const accepted = await onTerminal(["kv", "namespace", "delete", "--namespace-id", id], "y\r");
  assert.match(accepted, /Deleted KV namespace/);
  assert.equal((await p.api("GET", `${base}/${id}`)).status, 404);
});

test("on a terminal: a bulk put shows its progress bar", { skip: !terminalAvailable() && "needs util-linux script" }, async () => {
  const id = idFrom(ok(await kv(["namespace", "create", "TTY_BULK"])));
  const entries = Array.from({ length: 2500 }, (_, i) => ({ key: `bulk-${i}`, value: `v${i}` }));
  const screen = await onTerminal(["kv", "bulk", "put", file("tty-bulk.json", JSON.stringify(entries)), "--namespace-id", id]);
  assert.match(screen, /\[[^\]]*\] 100% \| 2500\/2500/);
  assert.match(screen, /Success!/);
  assert.equal((await apiValue(id, "bulk-2499"))?.toString(), "v2499");
});
