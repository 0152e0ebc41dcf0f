import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { startTestPlatform, type TestPlatform } from "../testing/platform.js";

// A stand-in for a prototype-pollution bug inside the running `edgecli serve` process: on SIGUSR2, a
// preloaded probe writes to Object.prototype the way a polluting parser would, and reports what happened.
let dir: string;
let probe: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), "edge-freeze-"));
  probe = join(dir, "probe.cjs");
  writeFileSync(
    probe,
    `"use strict";
process.on("SIGUSR2", () => {
  let threw = false;
  try { ({}).__proto__.edgeProbe = "polluted"; } catch { threw = true; }
  process.stdout.write(JSON.stringify({ msg: "pollution probe", threw, polluted: ({}).edgeProbe === "polluted" }) + "\\n");
});
`,
  );
});
after(() => rmSync(dir, { recursive: true, force: true }));

async function probeServe(args: string[]): Promise<{ threw: boolean; polluted: boolean; api: number }> {
  const p: TestPlatform = await startTestPlatform({ args: ["--dns-port", "0", ...args], nodeArgs: ["--require", probe] });
  try {
    p.process.kill("SIGUSR2");
    const deadline = Date.now() + 10_000;
    let line: string | undefined;
    while (
      !(line = p
        .logs()
        .split("\n")
        .find((l) => l.includes('"pollution probe"'))) &&
      Date.now() < deadline
    )
      await new Promise((r) => setTimeout(r, 20));
    assert.ok(line, `the probe answered:\n${p.output()}`);
    const { threw, polluted } = JSON.parse(line);
    // The server keeps serving either way, and a body field named like a property of Object.prototype is data
    // (zod assigns each key on a plain object: with a frozen prototype that threw and answered 500).
    const api = (await p.api("GET", "/zones")).status;
    const zone = await p.api("POST", "/zones", { name: "sealed.example", account: { id: p.accountId }, constructor: "c", toString: "t", valueOf: 1 });
    assert.ok(zone.status === 200 || zone.status === 400, `POST /zones with constructor fields: ${zone.status} ${JSON.stringify(zone.body)}`);
    assert.doesNotMatch(p.logs(), /"unexpected error"/);
    return { threw, polluted, api };
  } finally {
    await p.dispose();
  }
}

test("edgecli serve seals Object.prototype once started: a polluting write throws and reaches no object; constructor fields in bodies are data", async () => {
  assert.deepEqual(await probeServe([]), { threw: true, polluted: false, api: 200 });
});

test("--seal-object-prototype false leaves it extensible (what the seal protects against)", async () => {
  assert.deepEqual(await probeServe(["--seal-object-prototype", "false"]), { threw: false, polluted: true, api: 200 });
});
