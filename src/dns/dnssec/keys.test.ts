import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { generateKey, signingKey } from "./keys.js";

const KEYS_MODULE = fileURLToPath(new URL("./keys.js", import.meta.url));

test("a generated key parses back into the key it says it is", () => {
  for (const role of ["ksk", "zsk"] as const) {
    const m = generateKey(role);
    const k = signingKey(role, m);
    assert.equal(k.publicKey.length, 64, "P-256 public key: X and Y");
    assert.equal(k.publicKey.toString("base64"), m.public_key);
    assert.equal(k.tag, m.key_tag);
  }
});

// Node 20 deadlocked (the whole process, for good) when the JWK export of a key generateKeyPairSync had just made set
// off the garbage collection that freed the job which made it: 2 of 3 runs of this loop stopped within 3,000 keys.
// A tiny young generation makes collections frequent; the child's exit is the check (the timeout only ends a hang).
test("generating thousands of keys while the collector runs often never hangs", { timeout: 600_000 }, async () => {
  const script = `const { generateKey } = await import(${JSON.stringify(KEYS_MODULE)});
for (let i = 0; i < 20000; i++) generateKey(i % 2 ? "ksk" : "zsk");
console.log("done");`;
  const out = await new Promise<{ code: number | null; stdout: string; signal: string | null }>((resolve) => {
    const child = execFile(
      process.execPath,
      ["--max-semi-space-size=1", "--input-type=module", "-e", script],
      { timeout: 300_000, killSignal: "SIGKILL" },
      (err, stdout) => resolve({ code: child.exitCode, stdout, signal: err && "signal" in err ? (err.signal as string | null) : null }),
    );
  });
  assert.equal(out.signal, null, "the key generation loop hung and was killed");
  assert.equal(out.code, 0);
  assert.equal(out.stdout.trim(), "done");
});
