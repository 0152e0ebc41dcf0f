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
    // The server keeps serving either way.
    const api = (await p.api("GET", "/zones")).status;
    return { threw, polluted, api };
  } finally {
    await p.dispose();
  }
}

test("edgecli serve freezes Object.prototype once started: a polluting write throws and reaches no object", async () => {
  assert.deepEqual(await probeServe([]), { threw: true, polluted: false, api: 200 });
});

test("--freeze-object-prototype false leaves it writable (what the freeze protects against)", async () => {
  assert.deepEqual(await probeServe(["--freeze-object-prototype", "false"]), { threw: false, polluted: true, api: 200 });
});
