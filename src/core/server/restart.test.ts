import { randomBytes } from "node:crypto";
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, rmSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { runCli, startTestPlatform } from "../testing/platform.js";
import { hit, uploadScript } from "../../workers/testing/helpers.js";

/** Waits (up to 10 s) for the platform's output to match: stderr and stdout arrive independently. */
async function outputMatches(output: () => string, re: RegExp): Promise<void> {
  for (let waited = 0; !re.test(output()); waited += 20) {
    if (waited >= 10_000) assert.match(output(), re);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Runs `fn` with a fresh state directory, removed afterwards whatever happens. */
async function withStateDir(prefix: string, fn: (stateDir: string) => Promise<void>): Promise<void> {
  const stateDir = mkdtempSync(join(tmpdir(), prefix));
  try {
    await fn(stateDir);
  } finally {
    rmSync(stateDir, { recursive: true, force: true });
  }
}

test("a restart keeps accounts and tokens, and does not bootstrap again", async () => {
  await withStateDir("edge-restart-", async (stateDir) => {
    const first = await startTestPlatform({ stateDir });
    let value: string;
    let credsBefore: string;
    try {
      // The banner goes to stderr and "ready" to stdout: they may arrive in either order.
      await outputMatches(first.output, /First start: created an account/);
      const created = await first.api("POST", "/user/tokens", { name: "survivor", permissions: ["dns_read"], account_id: first.accountId });
      value = created.body.result.value as string;
      credsBefore = readFileSync(join(stateDir, "credentials.json"), "utf8");
    } finally {
      await first.stop();
    }
    assert.equal(first.process.exitCode, 0, "SIGTERM ends the platform cleanly");

    const second = await startTestPlatform({ stateDir, env: { EDGE_BOOTSTRAP_API_TOKEN: "" } });
    try {
      assert.doesNotMatch(second.output(), /First start/);
      const res = await fetch(`${second.apiUrl}/user/tokens/verify`, { headers: { authorization: `Bearer ${value}` } });
      assert.equal(res.status, 200);
      assert.equal(readFileSync(join(stateDir, "credentials.json"), "utf8"), credsBefore);
    } finally {
      await second.stop();
    }
  });
});

test("GET /healthz answers without credentials", async () => {
  const p = await startTestPlatform();
  try {
    const res = await fetch(`${p.url}/healthz`);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { status: "ok" });
  } finally {
    await p.dispose();
  }
});

test("a port that is taken is a clear error, not a crash", async () => {
  const p = await startTestPlatform();
  try {
    const port = new URL(p.url).port;
    const second = await runCli(["serve", "--port", port, "--metrics-port", "0", "--dns-port", "0", "--state-dir", join(p.stateDir, "other")]);
    assert.equal(second.code, 1);
    assert.match(second.stderr, new RegExp(`Cannot listen on 127\\.0\\.0\\.1:${port}: the address is already in use`));
    assert.doesNotMatch(second.stderr, /This is a bug/);
  } finally {
    await p.dispose();
  }
});

test("a --workerd-binary that cannot run stops the start with a clear error", async () => {
  await withStateDir("edge-workerd-", async (stateDir) => {
    const r = await runCli([
      "serve",
      "--port",
      "0",
      "--metrics-port",
      "0",
      "--dns-port",
      "0",
      "--state-dir",
      stateDir,
      "--workerd-binary",
      join(stateDir, "no-workerd"),
    ]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /Could not run workerd at .*no-workerd \(see --workerd-binary\)/);
    assert.doesNotMatch(r.stderr, /This is a bug/);
  });
});

test("a secrets key that cannot open the stored secrets stops the start and says which key to restore", async () => {
  await withStateDir("edge-secrets-key-", async (stateDir) => {
    const p = await startTestPlatform({ stateDir });
    const code = `export default { fetch(r, env) { return new Response(env.PIN ?? "unset"); } };`;
    assert.equal((await uploadScript(p, "keyed", code)).status, 200);
    assert.equal(
      (await p.api("PUT", `/accounts/${p.accountId}/workers/scripts/keyed/secrets`, { name: "PIN", text: "4711", type: "secret_text" })).status,
      200,
    );
    await p.stop();
    const r = await runCli(["serve", "--port", "0", "--metrics-port", "0", "--dns-port", "0", "--state-dir", stateDir], {
      env: { EDGE_SECRETS_KEY: randomBytes(32).toString("base64") },
    });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /cannot be opened with this secrets key.*EDGE_SECRETS_KEY or keys\/secrets\.key/);
    assert.doesNotMatch(r.stderr, /This is a bug/);
    const back = await startTestPlatform({ stateDir });
    try {
      assert.equal((await hit(back, "keyed", "/")).text, "4711", "with its own key the state starts and the secret reaches the script");
    } finally {
      await back.stop();
    }
  });
});

test("SIGTERM lets an upload in flight finish, then the state is closed cleanly", async () => {
  await withStateDir("edge-drain-", async (stateDir) => {
    const p = await startTestPlatform({ stateDir });
    assert.equal((await p.api("POST", `/accounts/${p.accountId}/r2/buckets`, { name: "drain" })).status, 200);
    const { request } = await import("undici");
    const chunk = Buffer.alloc(64 * 1024, 1);
    let sent = 0;
    const body = Readable.from(
      (async function* () {
        for (let i = 0; i < 8; i++) {
          yield chunk;
          sent++;
          if (i === 1) p.process.kill("SIGTERM"); // the platform is told to stop while the body is still arriving
          await new Promise((r) => setTimeout(r, 100));
        }
      })(),
    );
    const res = await request(`${p.apiUrl}/accounts/${p.accountId}/r2/buckets/drain/objects/big.bin`, {
      method: "PUT",
      headers: p.headers({ "content-type": "application/octet-stream", "content-length": String(8 * chunk.length) }),
      body,
    });
    assert.equal(res.statusCode, 200, await res.body.text());
    assert.equal(sent, 8);
    const exitCode = await new Promise<number | null>((r) => (p.process.exitCode !== null ? r(p.process.exitCode) : p.process.once("exit", r)));
    assert.equal(exitCode, 0);

    const again = await startTestPlatform({ stateDir });
    try {
      // The bootstrap token of the first start is still the valid one.
      const head = await fetch(`${again.apiUrl}/accounts/${p.accountId}/r2/buckets/drain/objects/big.bin`, { headers: p.headers() });
      assert.equal(head.status, 200);
      assert.equal((await head.arrayBuffer()).byteLength, 8 * chunk.length);
    } finally {
      await again.stop();
    }
  });
});
