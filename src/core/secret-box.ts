import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { UserError } from "./errors.js";

/** Where the key lives unless EDGE_SECRETS_KEY gives it. */
export const SECRETS_KEY_FILE = join("keys", "secrets.key");
export const SECRETS_KEY_ENV = "EDGE_SECRETS_KEY";
const PREFIX = "v1.";
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** A value sealed by one key cannot be opened by another, or moved to another row: the context is authenticated. */
export class SecretOpenError extends UserError {}

/**
 * Values that must be readable again (worker secrets: workerd needs them in clear) are kept sealed with
 * AES-256-GCM, so a copy of the database (a backup, a support bundle) does not disclose them without the key.
 * The key is 32 random bytes: from EDGE_SECRETS_KEY (base64) when the operator keeps it elsewhere, otherwise
 * from `<state>/keys/secrets.key` (mode 0600), created on first use.
 */
export class SecretBox {
  private constructor(private readonly key: Buffer) {}

  static fromKey(key: Buffer, source = "the secrets key"): SecretBox {
    if (key.length !== 32) throw new UserError(`${source} must hold 32 bytes in base64 (e.g. openssl rand -base64 32); it holds ${key.length}.`);
    return new SecretBox(key);
  }

  /** The platform's box: the key from the environment, or the state directory's key file (created when missing). */
  static load(stateDir: string, env: NodeJS.ProcessEnv = process.env): SecretBox {
    const given = env[SECRETS_KEY_ENV];
    if (given) return SecretBox.fromKey(Buffer.from(given, "base64"), SECRETS_KEY_ENV);
    const file = join(stateDir, SECRETS_KEY_FILE);
    try {
      return SecretBox.fromKey(Buffer.from(readFileSync(file, "utf8").trim(), "base64"), file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    }
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    const key = randomBytes(32);
    // "wx": two processes starting at once must not each write a key; the loser reads the winner's.
    try {
      writeFileSync(file, key.toString("base64") + "\n", { mode: 0o600, flag: "wx" });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "EEXIST") return SecretBox.load(stateDir, env);
      throw err;
    }
    return new SecretBox(key);
  }

  /** Seals `plain`, bound to `context` (e.g. the row it is stored in). */
  seal(plain: string, context: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.key, iv);
    cipher.setAAD(Buffer.from(context));
    const body = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
    return PREFIX + Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64url");
  }

  /** Opens what `seal` made for the same context; a wrong key, context or a changed value is a SecretOpenError. */
  open(sealed: string, context: string): string {
    const raw = sealed.startsWith(PREFIX) ? Buffer.from(sealed.slice(PREFIX.length), "base64url") : Buffer.alloc(0);
    if (raw.length < IV_BYTES + TAG_BYTES) throw new SecretOpenError(`The stored secret ${context} is not in the sealed format.`);
    try {
      const decipher = createDecipheriv("aes-256-gcm", this.key, raw.subarray(0, IV_BYTES));
      decipher.setAAD(Buffer.from(context));
      decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString("utf8");
    } catch {
      throw new SecretOpenError(
        `The stored secret ${context} cannot be opened with this secrets key. Was ${SECRETS_KEY_ENV} or ${SECRETS_KEY_FILE} in the state directory changed or lost? Restore it, or put the secret again.`,
      );
    }
  }
}
