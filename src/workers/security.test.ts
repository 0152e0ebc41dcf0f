import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { after, before, test } from "node:test";
import { Agent, request } from "undici";
import type { TestPlatform } from "../core/testing/platform.js";
import { createAccount, hit, logEntries, uploadScript, startPlatform } from "./testing/helpers.js";
import { runOnTerminal, terminalAvailable } from "../core/testing/terminal.js";

let p: TestPlatform;
before(async () => {
  p = await startPlatform();
});
after(() => p?.dispose());

const createBucket = async (name: string, accountId = p.accountId) => {
  // The global key: it reaches the second account too (the bootstrap token reaches only the first).
  const r = await p.api("POST", `/accounts/${accountId}/r2/buckets`, { name }, p.keyHeaders());
  assert.equal(r.status, 200, JSON.stringify(r.body));
};

/** A script bound to one bucket that can put, get and list it. */
const bucketScript = `export default { async fetch(req, env) {
  const key = new URL(req.url).pathname.slice(1);
  if (req.method === "PUT") { await env.B.put(key, await req.text()); return new Response("put"); }
  if (key === "") return Response.json((await env.B.list()).objects.map((o) => o.key));
  const o = await env.B.get(key);
  return o ? new Response(await o.text()) : new Response("null", { status: 404 });
} };`;

test("a script's fetch() cannot reach the binding server, the API, or any loopback or private address", async () => {
  const bindingAddr = logEntries(p).find((e) => e.msg === "worker binding server listening")?.address as string;
  assert.match(bindingAddr ?? "", /^unix:\//, "the binding server listens on a unix socket");
  const socketPath = bindingAddr.slice("unix:".length);
  // Only this user can reach it: its directory is private. A URL cannot name a unix socket, so a script's
  // fetch() has no way to address it; the loopback listeners are tried below.
  assert.equal(statSync(dirname(socketPath)).mode & 0o077, 0, "the socket's directory is private");
  const edge = new URL(p.url);
  const targets = [
    `http://127.0.0.1:${edge.port}/client/v4/user`,
    `http://localhost:${edge.port}/healthz`,
    `http://[::1]:${edge.port}/`,
    "http://10.0.0.1/",
    "http://172.16.0.1/",
    "http://192.168.1.1/",
    "http://169.254.169.254/latest/meta-data/",
  ];
  const code = `export default { async fetch(req) {
    const target = new URL(req.url).searchParams.get("t");
    try { const r = await fetch(target, { headers: { "x-edge-binding": "forged" } }); return new Response("reached " + r.status); }
    catch (e) { return new Response("blocked"); }
  } };`;
  assert.equal((await uploadScript(p, "prober", code)).status, 200);
  for (const t of targets) {
    const r = await hit(p, "prober", `/?t=${encodeURIComponent(t)}`);
    assert.equal(r.text, "blocked", t);
  }
  // Blocked by the outbound policy (not some other failure): the platform's outbound (edge/origin/forwarder.ts,
  // the script's global outbound) logs one refusal per target, naming the script. The log is written
  // asynchronously; wait for the lines (up to 10 s).
  const denials = () => logEntries(p).filter((e) => e.script === "prober" && /^subrequest refused: not a public address/.test(String(e.msg))).length;
  for (let waited = 0; denials() < targets.length && waited < 10_000; waited += 50) await new Promise((r) => setTimeout(r, 50));
  assert.ok(denials() >= targets.length, `every target was denied by policy (${denials()} denials for ${targets.length} targets)`);
  // Directly, without the header workerd injects (or with a guessed one), the binding server refuses.
  const direct = new Agent({ connect: { socketPath } });
  try {
    const bare = await request("http://fake-host/", { dispatcher: direct, headers: { "cf-r2-request": JSON.stringify({ version: 1, method: "list" }) } });
    assert.equal(bare.statusCode, 403);
    await bare.body.dump();
    const identity = Buffer.from(JSON.stringify({ kind: "r2", accountId: p.accountId, bucketName: "x" })).toString("base64url");
    const forged = await request("http://fake-host/", { dispatcher: direct, headers: { "x-edge-binding": `${"A".repeat(43)}.${identity}` } });
    assert.equal(forged.statusCode, 403);
    await forged.body.dump();
  } finally {
    await direct.close();
  }
});

test("a script bound to bucket X cannot read bucket Y, nor another account's bucket of the same name", async () => {
  await createBucket("bucket-x");
  await createBucket("bucket-y");
  const otherId = await createAccount(p, "Neighbour");
  await createBucket("bucket-x", otherId);

  const bind = (bucket: string) => ({ bindings: [{ type: "r2_bucket", name: "B", bucket_name: bucket }] });
  assert.equal((await uploadScript(p, "reader-x", bucketScript, bind("bucket-x"))).status, 200);
  assert.equal((await uploadScript(p, "writer-y", bucketScript, bind("bucket-y"))).status, 200);
  assert.equal((await uploadScript(p, "neighbour-x", bucketScript, bind("bucket-x"), { accountId: otherId, headers: p.keyHeaders() })).status, 200);

  assert.equal((await hit(p, "writer-y", "/only-in-y", { method: "PUT", body: "y data" })).text, "put");
  assert.equal((await hit(p, "neighbour-x", "/only-in-neighbour", { method: "PUT", body: "their data" })).text, "put");
  assert.equal((await hit(p, "reader-x", "/mine", { method: "PUT", body: "x data" })).text, "put");

  assert.equal((await hit(p, "reader-x", "/only-in-y")).status, 404);
  assert.equal((await hit(p, "reader-x", "/only-in-neighbour")).status, 404);
  assert.deepEqual(JSON.parse((await hit(p, "reader-x", "/")).text), ["mine"]);
  assert.deepEqual(JSON.parse((await hit(p, "neighbour-x", "/")).text), ["only-in-neighbour"]);
  assert.equal((await hit(p, "writer-y", "/only-in-y")).text, "y data");

  // Binding a bucket that exists only in another account is refused at upload.
  await createBucket("neighbours-only", otherId);
  const refused = await uploadScript(p, "grabber", bucketScript, bind("neighbours-only"));
  assert.equal(refused.status, 400);
  assert.match(refused.body.errors[0].message, /R2 bucket "neighbours-only" does not exist in this account/);
});

test("the binding server trusts only the exact header workerd injects, also after it has served that header", async () => {
  const runDir = join(p.stateDir, "workers-run", "reader-x");
  const gen = readdirSync(runDir)
    .sort((a, b) => Number(a) - Number(b))
    .at(-1)!;
  const config = readFileSync(join(runDir, gen, "config.capnp"), "utf8");
  const [, address, value] = /external = \(address = "unix:([^"]+)", http = \(injectRequestHeaders = \[\(name = "x-edge-binding", value = "([^"]+)"/.exec(
    config,
  )!;
  const direct = new Agent({ connect: { socketPath: address } });
  const list = (header: string) =>
    request("http://fake-host/", {
      dispatcher: direct,
      headers: { "x-edge-binding": header, "cf-r2-request": JSON.stringify({ version: 1, method: "list" }) },
    });
  try {
    const valid = await list(value);
    assert.equal(valid.statusCode, 200, "the injected header is what authorizes a call");
    await valid.body.dump();
    const dot = value.indexOf(".");
    const flipped = `${value[0] === "A" ? "B" : "A"}${value.slice(1, dot)}${value.slice(dot)}`;
    for (const forged of [flipped, value.slice(dot), value.slice(0, dot)]) {
      const r = await list(forged);
      assert.equal(r.statusCode, 403, forged.slice(dot));
      await r.body.dump();
    }
  } finally {
    await direct.close();
  }
});

test("a secret value never appears in an API answer, a log line, CLI output or any file of the state; workerd gets it, and nothing else, in its environment", async () => {
  const value = "Zq7-never-show-me-91c";
  const cwd = await import("node:fs/promises").then((fs) => fs.mkdtemp(join(p.stateDir, "..", "secret-proj-")));
  const { writeFileSync, rmSync } = await import("node:fs");
  try {
    writeFileSync(join(cwd, "edge.toml"), 'name = "secretive"\nmain = "index.js"\ncompatibility_date = "2024-09-01"\n');
    writeFileSync(join(cwd, "index.js"), 'export default { fetch(r, env) { return new Response(env.SHH ? "set" : "unset"); } };\n');
    const outputs = [
      await p.cli(["secret", "put", "SHH"], { input: `${value}\n`, cwd }),
      await p.cli(["deploy"], { cwd }),
      await p.cli(["secret", "list"], { cwd }),
      await p.cli(["secret", "list", "--format", "pretty"], { cwd }),
    ];
    for (const o of outputs) assert.equal(o.code, 0, o.stderr);
    assert.match(outputs[0].stdout, /Success! Uploaded secret SHH/);
    assert.deepEqual(JSON.parse(outputs[2].stdout), [{ name: "SHH", type: "secret_text" }]);
    assert.equal((await hit(p, "secretive", "/")).text, "set");
    const refused = await p.cli(["secret", "delete", "SHH"], { cwd });
    assert.equal(refused.code, 1, "no terminal to confirm on, no --force");
    assert.match(refused.stderr, /pass --force/);
    assert.equal((await hit(p, "secretive", "/")).text, "set");
    const del = await p.cli(["secret", "delete", "SHH", "--force"], { cwd });
    assert.equal(del.code, 0, del.stderr);
    assert.equal((await hit(p, "secretive", "/")).text, "unset");
    outputs.push(del);
    for (const o of outputs) assert.ok(!o.stdout.includes(value) && !o.stderr.includes(value), "CLI output carries no secret");
    const api = [
      await p.api("GET", `/accounts/${p.accountId}/workers/scripts/secretive/settings`),
      await p.api("GET", `/accounts/${p.accountId}/workers/scripts`),
    ];
    for (const a of api) assert.ok(!JSON.stringify(a.body).includes(value));
    // Set it again so that a live workerd runs with it; then look at every file of the state and at workerd.
    await p.cli(["secret", "put", "SHH"], { input: value, cwd });
    assert.equal((await hit(p, "secretive", "/")).text, "set");
    const files: string[] = [];
    const walk = (d: string) => {
      for (const f of readdirSync(d)) {
        const full = join(d, f);
        const st = statSync(full);
        if (st.isDirectory()) walk(full);
        else if (st.isFile()) files.push(full);
      }
    };
    walk(p.stateDir);
    const configs = files.filter((f) => f.endsWith("config.capnp"));
    assert.ok(configs.length > 0 && files.some((f) => f.endsWith("workers.sqlite")));
    for (const f of files) assert.ok(!readFileSync(f).includes(value), `${f} does not hold the secret in clear`);
    for (const c of configs) assert.equal(statSync(c).mode & 0o777, 0o600);
    assert.ok(!p.output().includes(value), "no log line carries the secret");
    const live = p
      .logs()
      .split("\n")
      .filter((l) => l.includes('"worker version live"') && l.includes('"script":"secretive"'))
      .pop()!;
    const environ = readFileSync(`/proc/${JSON.parse(live).workerd_pid}/environ`, "utf8")
      .split("\0")
      .filter(Boolean);
    assert.deepEqual(environ, [`EDGE_WORKER_SECRET_0=${value}`], "workerd's environment is its secrets and nothing of the platform's");
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
});

test("on a terminal, secret put asks with a hidden prompt: the value is not echoed and reaches the script", async (t) => {
  if (!terminalAvailable()) return t.skip("util-linux `script` (to get a pseudo-terminal) is not installed");
  const code = `export default { fetch(r, env) { return new Response(env.TTY_SECRET ?? "unset"); } };`;
  assert.equal((await uploadScript(p, "tty-target", code)).status, 200);
  const value = "typed-on-a-tty-5521";
  // Typed the moment the prompt shows: echo must already be off by then.
  const run = await runOnTerminal(["secret", "put", "TTY_SECRET", "--name", "tty-target"], {
    env: { EDGE_API_URL: p.apiUrl, EDGE_API_TOKEN: p.token, EDGE_ACCOUNT_ID: p.accountId },
    answers: [{ prompt: "Enter a secret value:", text: `${value}\r` }],
  });
  assert.equal(run.code, 0, run.screen);
  assert.match(run.screen, /Success! Uploaded secret TTY_SECRET/);
  assert.ok(!run.screen.includes(value), "the typed value is not echoed");
  assert.equal((await hit(p, "tty-target", "/")).text, value);
});
