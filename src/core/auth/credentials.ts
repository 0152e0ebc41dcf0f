import { createHash, randomBytes, randomInt, timingSafeEqual } from "node:crypto";

const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** 40 alphanumerics: the shape every v4 client's token validator accepts. */
export function newApiToken(): string {
  let s = "";
  for (let i = 0; i < 40; i++) s += ALNUM[randomInt(ALNUM.length)];
  return s;
}

/** 37 lowercase hex characters, like a hosted global API key. */
export function newGlobalKey(): string {
  return randomBytes(19).toString("hex").slice(0, 37);
}

export function newId(): string {
  return randomBytes(16).toString("hex");
}

/**
 * Tokens and keys carry 200+ bits of randomness, so a fast hash is enough to make the stored
 * form useless to a reader of the database; slow password hashing would only tax every request.
 */
export function hashSecret(secret: string): string {
  return createHash("sha256").update(secret, "utf8").digest("hex");
}

export function secretMatches(secret: string, storedHash: string): boolean {
  const a = Buffer.from(hashSecret(secret), "hex");
  const b = Buffer.from(storedHash, "hex");
  return a.length === b.length && timingSafeEqual(a, b);
}

export const TOKEN_RE = /^[A-Za-z0-9_-]{20,256}$/;
export const KEY_RE = /^[A-Za-z0-9_-]{20,128}$/;
export const EMAIL_RE = /^[^\s@]+@[^\s@]+$/;
export const ACCOUNT_ID_RE = /^[0-9a-f]{32}$/;
