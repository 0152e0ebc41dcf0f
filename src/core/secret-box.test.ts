import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { SecretBox, SecretOpenError, SECRETS_KEY_FILE } from "./secret-box.js";
import { UserError } from "./errors.js";

test("a sealed value opens with the same key and context, and with nothing else", () => {
  const box = SecretBox.fromKey(randomBytes(32));
  const sealed = box.seal("hunter2 ✓", "acct/script/NAME");
  assert.ok(!sealed.includes("hunter2"));
  assert.notEqual(box.seal("hunter2 ✓", "acct/script/NAME"), sealed, "a fresh nonce each time");
  assert.equal(box.open(sealed, "acct/script/NAME"), "hunter2 ✓");
  assert.throws(() => box.open(sealed, "acct/other/NAME"), SecretOpenError, "moved to another row");
  assert.throws(() => SecretBox.fromKey(randomBytes(32)).open(sealed, "acct/script/NAME"), /cannot be opened with this secrets key/);
  const flipped = sealed.slice(0, -2) + (sealed.at(-2) === "A" ? "B" : "A") + sealed.at(-1);
  assert.throws(() => box.open(flipped, "acct/script/NAME"), SecretOpenError, "a changed value");
  assert.throws(() => box.open("plain text", "acct/script/NAME"), /not in the sealed format/);
});

test("the key comes from EDGE_SECRETS_KEY, or from a 0600 file in the state made once and reused", () => {
  const dir = mkdtempSync(join(tmpdir(), "edge-secret-box-"));
  try {
    const first = SecretBox.load(dir, {});
    const file = join(dir, SECRETS_KEY_FILE);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(statSync(join(dir, "keys")).mode & 0o777, 0o700);
    assert.equal(Buffer.from(readFileSync(file, "utf8").trim(), "base64").length, 32);
    const sealed = first.seal("v", "c");
    assert.equal(SecretBox.load(dir, {}).open(sealed, "c"), "v", "the same key after a restart");

    const key = randomBytes(32);
    const fromEnv = SecretBox.load(dir, { EDGE_SECRETS_KEY: key.toString("base64") });
    assert.equal(SecretBox.fromKey(key).open(fromEnv.seal("w", "c"), "c"), "w");
    assert.throws(() => fromEnv.open(sealed, "c"), SecretOpenError, "the environment's key wins over the file");
    assert.throws(
      () => SecretBox.load(dir, { EDGE_SECRETS_KEY: "c2hvcnQ=" }),
      (e: unknown) => e instanceof UserError && /EDGE_SECRETS_KEY must hold 32 bytes .* it holds 5/.test(e.message),
    );
    writeFileSync(file, "c2hvcnQ=\n");
    assert.throws(
      () => SecretBox.load(dir, {}),
      (e: unknown) => e instanceof UserError && e.message.startsWith(`${file} must hold 32 bytes`),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
