import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defineCommand } from "./command.js";
import { parseArgs } from "./parse.js";
import { loadProjectConfig } from "./config-file.js";
import { runCli } from "../testing/platform.js";

const cmd = defineCommand({
  path: ["demo"],
  describe: "demo",
  positionals: [
    { name: "KEY", describe: "key", required: true },
    { name: "VALUE", describe: "value" },
  ],
  options: {
    ttl: { type: "number", describe: "ttl" },
    preview: { type: "boolean", describe: "preview" },
    tag: { type: "strings", describe: "tags" },
    mode: { type: "string", describe: "mode", choices: ["a", "b"] },
  },
  handler: async () => {},
});

test("options in every spelling", () => {
  const r = parseArgs(cmd, ["k", "v", "--ttl=60", "--preview", "false", "--tag", "x", "--tag=y", "--mode", "a"]);
  assert.equal(r.values.KEY, "k");
  assert.equal(r.values.VALUE, "v");
  assert.equal(r.values.ttl, 60);
  assert.equal(r.values.preview, false);
  assert.deepEqual(r.values.tag, ["x", "y"]);
  assert.ok(r.given.has("preview"));
  assert.equal(parseArgs(cmd, ["k", "--preview"]).values.preview, true);
  assert.equal(parseArgs(cmd, ["k", "--no-preview"]).values.preview, false);
  assert.equal(parseArgs(cmd, ["--", "-dash-key"]).values.KEY, "-dash-key");
});

test("usage errors are specific", () => {
  assert.throws(() => parseArgs(cmd, []), /Not enough non-option arguments: got 0, need at least 1/);
  assert.throws(() => parseArgs(cmd, ["k", "--nope"]), /Unknown argument: nope/);
  assert.throws(() => parseArgs(cmd, ["k", "--ttl", "soon"]), /not a number/);
  assert.throws(() => parseArgs(cmd, ["k", "--mode", "c"]), /Choices: a, b/);
  assert.throws(() => parseArgs(cmd, ["a", "b", "c"]), /Unknown arguments: c/);
});

test("the config file: environments, bindings and errors with file and line", async () => {
  const dir = mkdtempSync(join(tmpdir(), "edge-cfg-"));
  try {
    writeFileSync(
      join(dir, "edge.toml"),
      [
        'name = "app"',
        'main = "src/index.ts"',
        'compatibility_date = "2024-09-01"',
        "[vars]",
        'GREETING = "hi"',
        "[[kv_namespaces]]",
        'binding = "MY_KV"',
        'id = "abc"',
        "[env.staging]",
        "[[env.staging.r2_buckets]]",
        'binding = "BUCKET"',
        'bucket_name = "b1"',
      ].join("\n"),
    );
    const top = await loadProjectConfig({ cwd: dir });
    assert.equal(top?.name, "app");
    assert.deepEqual(top?.vars, { GREETING: "hi" });
    assert.deepEqual(top?.kv_namespaces, [{ binding: "MY_KV", id: "abc", preview_id: undefined }]);
    const staging = await loadProjectConfig({ cwd: dir, env: "staging" });
    assert.equal(staging?.name, "app-staging");
    assert.equal(staging?.project_name, "app");
    assert.equal(staging?.main, "src/index.ts");
    assert.deepEqual(staging?.kv_namespaces, [], "bindings are not inherited");
    assert.equal(staging?.r2_buckets[0].bucket_name, "b1");
    await assert.rejects(loadProjectConfig({ cwd: dir, env: "prod" }), /no \[env\.prod\] section/);

    writeFileSync(join(dir, "edge.toml"), ['name = "app"', "[[r2_buckets]]", 'binding = "my-bucket"', 'bucket_name = "b"'].join("\n"));
    await assert.rejects(loadProjectConfig({ cwd: dir }), (e: Error) =>
      /edge\.toml:3: "r2_buckets\.binding" "my-bucket" is not a valid JavaScript identifier/.test(e.message),
    );
    writeFileSync(join(dir, "edge.toml"), 'name = "app"\nmain = 5\n');
    await assert.rejects(loadProjectConfig({ cwd: dir }), /edge\.toml:2: "main" must be a string/);
    writeFileSync(join(dir, "edge.toml"), 'name = "app\n');
    await assert.rejects(loadProjectConfig({ cwd: dir }), /edge\.toml:1:\d+: invalid TOML/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the binary: --help, --version, unknown commands and user errors", async () => {
  const help = await runCli(["--help"]);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /edgecli serve/);
  const version = await runCli(["--version"]);
  assert.match(version.stdout.trim(), /^\d+\.\d+\.\d+$/);
  const unknown = await runCli(["frobnicate"]);
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /Unknown command: frobnicate/);
  const serveHelp = await runCli(["serve", "--help"]);
  assert.match(serveHelp.stdout, /--state-dir/);
  // What a new user trying a proxied site on this machine needs: a bare address is taken, and the edge port serves it.
  assert.match(serveHelp.stdout, /--origin-allow +Addresses or CIDR ranges [^\n]*e\.g\. 127\.0\.0\.2 for an origin on this host/);
  assert.match(serveHelp.stdout, /--host +Address of the edge HTTP port \([^)]*proxied sites\)/);
  const recordHelp = await runCli(["dns", "record", "create", "--help"]);
  assert.match(recordHelp.stdout, /--proxied +Serve A\/AAAA\/CNAME through the edge: [^\n]*--origin-allow/);
  const badFlag = await runCli(["whoami", "--bogus"]);
  assert.equal(badFlag.code, 1);
  assert.match(badFlag.stderr, /Unknown argument: bogus/);
  const dir = mkdtempSync(join(tmpdir(), "edge-nocreds-"));
  try {
    const noCreds = await runCli(["whoami"], { cwd: dir, env: { EDGE_API_TOKEN: "", EDGE_STATE_DIR: "" } });
    assert.equal(noCreds.code, 1);
    assert.match(noCreds.stderr, /No credentials/);
    assert.doesNotMatch(noCreds.stderr, /at .*\.js:\d+/, "no stack trace for user errors");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("every command group says what it is for, and every command has a description", async () => {
  const { commands, groups } = await import("../../commands.js");
  for (const c of commands) {
    assert.ok(c.describe.length > 10, `edgecli ${c.path.join(" ")} has no description`);
    for (let i = 1; i < c.path.length; i++) {
      const group = c.path.slice(0, i).join(" ");
      assert.ok(groups[group], `group "edgecli ${group}" has no description in src/commands.ts`);
    }
  }
  const kvHelp = await runCli(["kv", "--help"]);
  assert.equal(kvHelp.code, 0);
  assert.match(kvHelp.stdout, /edgecli kv namespace\s+Create, list and delete KV namespaces/);
});

test("the CLI finds .edge/credentials.json in a parent directory", async () => {
  const root = mkdtempSync(join(tmpdir(), "edge-creds-"));
  try {
    const { mkdirSync } = await import("node:fs");
    mkdirSync(join(root, ".edge"));
    mkdirSync(join(root, "project", "src"), { recursive: true });
    // An address nothing listens on: the error then shows the credentials were found and a call was attempted.
    writeFileSync(join(root, ".edge", "credentials.json"), JSON.stringify({ api_token: "x".repeat(40), account_id: "a".repeat(32) }));
    const r = await runCli(["whoami"], {
      cwd: join(root, "project", "src"),
      env: { EDGE_API_TOKEN: "", EDGE_STATE_DIR: "", EDGE_API_URL: "http://127.0.0.1:9/client/v4" },
    });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /Could not reach the Edge API at http:\/\/127\.0\.0\.1:9/);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

const PROTOTYPE_KEYS = ["__proto__", "constructor", "prototype"];

test("flags named __proto__, constructor or prototype are unknown arguments, in the parser and the binary", async () => {
  for (const k of PROTOTYPE_KEYS) {
    assert.throws(() => parseArgs(cmd, ["k", `--${k}`, "x"]), new RegExp(`Unknown argument: ${k}`));
    assert.throws(() => parseArgs(cmd, ["k", `--${k}=x`]), new RegExp(`Unknown argument: ${k}`));
    assert.throws(() => parseArgs(cmd, ["k", `--no-${k}`]), /Unknown argument/);
    const r = await runCli(["whoami", `--${k}`, "x"]);
    assert.equal(r.code, 1, k);
    assert.match(r.stderr, new RegExp(`Unknown argument: ${k}`));
  }
});

test("the config file: vars, bindings and environments named __proto__, constructor or prototype are refused or not found", async () => {
  const dir = mkdtempSync(join(tmpdir(), "edge-cfg-proto-"));
  try {
    for (const k of PROTOTYPE_KEYS) {
      writeFileSync(join(dir, "edge.toml"), ['name = "app"', "[vars]", `"${k}" = "x"`, 'OK = "y"'].join("\n"));
      await assert.rejects(loadProjectConfig({ cwd: dir }), new RegExp(`"vars\\.${k}" is reserved`), `vars.${k}`);
      writeFileSync(join(dir, "edge.toml"), ['name = "app"', "[[kv_namespaces]]", `binding = "${k}"`, 'id = "abc"'].join("\n"));
      await assert.rejects(loadProjectConfig({ cwd: dir }), /is reserved/, `binding ${k}`);
      writeFileSync(join(dir, "edge.toml"), ['name = "app"', "[env.staging]", 'name = "s"'].join("\n"));
      await assert.rejects(loadProjectConfig({ cwd: dir, env: k }), new RegExp(`no \\[env\\.${k}\\] section`), `--env ${k}`);
    }
    // Declared as a real table, such an environment is a name like any other.
    writeFileSync(join(dir, "edge.toml"), ['name = "app"', '[env."__proto__"]', 'name = "odd"', "[env.__proto__.vars]", 'A = "1"'].join("\n"));
    const odd = await loadProjectConfig({ cwd: dir, env: "__proto__" });
    assert.equal(odd?.name, "odd");
    assert.deepEqual(odd?.vars, { A: "1" });
    assert.equal(({} as Record<string, unknown>).A, undefined);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the platform config file: keys named __proto__, constructor or prototype are unknown keys", async () => {
  const dir = mkdtempSync(join(tmpdir(), "edge-platform-proto-"));
  try {
    for (const k of PROTOTYPE_KEYS) {
      const file = join(dir, "platform.toml");
      writeFileSync(file, `"${k}" = 1\n`);
      const r = await runCli(["serve", "--state-dir", join(dir, "state"), "--platform-config", file, "--port", "0", "--metrics-port", "0"]);
      assert.equal(r.code, 1, `${k}: ${r.stdout}${r.stderr}`);
      assert.match(r.stderr, new RegExp(`unknown key "${k}"`));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
