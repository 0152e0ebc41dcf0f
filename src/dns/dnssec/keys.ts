import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, sign, type KeyObject } from "node:crypto";
import { nameWire } from "./wire.js";

/** ECDSA Curve P-256 with SHA-256 (RFC 6605): the only algorithm signed with here. */
export const ALGORITHM = 13;
export const KEY_TYPE = "ECDSAP256SHA256";
/** SHA-256 digests in DS records (RFC 4509). */
export const DIGEST_TYPE = 2;
/** The zone key bit (256) and, for key-signing keys, the secure entry point bit (1). */
export const ZSK_FLAGS = 256;
export const KSK_FLAGS = 257;
/** TTL of the DNSKEY set and of the DS the parent is asked to publish. */
export const DNSKEY_TTL = 3600;

export type KeyRole = "ksk" | "zsk";

/** A key pair as kept: the private key as PKCS#8 PEM (sealed by the store), the public key as DNSKEY bytes in base64. */
export interface KeyMaterial {
  public_key: string;
  private_key: string;
  key_tag: number;
}

/** A signing key ready for use: parsed once, kept in memory beside the zone. */
export interface SigningKey {
  role: KeyRole;
  flags: number;
  tag: number;
  /** DNSKEY public key field: the curve point x | y (64 bytes, RFC 6605 §4). */
  publicKey: Buffer;
  privateKey: KeyObject;
}

export const newKeyId = () => randomBytes(16).toString("hex");
export const flagsOf = (role: KeyRole) => (role === "ksk" ? KSK_FLAGS : ZSK_FLAGS);

/**
 * A fresh P-256 key pair for one role. The pair comes out encoded and the key is parsed again: a KeyObject of
 * generateKeyPairSync's shares a lock with the job that made it, and Node 20 deadlocks when a JWK export of it (which
 * allocates while holding that lock) sets off the garbage collection that frees the job (whose destructor takes the
 * lock): the whole process stopped, 1 in a few thousand keys (src/dns/dnssec/keys.test.ts).
 */
export function generateKey(role: KeyRole): KeyMaterial {
  const { privateKey: pem } = generateKeyPairSync("ec", {
    namedCurve: "prime256v1",
    publicKeyEncoding: { type: "spki", format: "der" },
    privateKeyEncoding: { type: "pkcs8", format: "pem" },
  });
  const publicKey = dnskeyPublicKey(createPrivateKey(pem));
  return { public_key: publicKey.toString("base64"), private_key: pem, key_tag: keyTag(dnskeyRdata(flagsOf(role), publicKey)) };
}

/** Parses a stored key; the public key is derived again from the private one and must match what was stored. */
export function signingKey(role: KeyRole, m: KeyMaterial): SigningKey {
  const privateKey = createPrivateKey(m.private_key);
  const publicKey = dnskeyPublicKey(privateKey);
  if (publicKey.toString("base64") !== m.public_key) throw new Error(`DNSSEC key ${m.key_tag}: the stored public key does not belong to its private key`);
  return { role, flags: flagsOf(role), tag: m.key_tag, publicKey, privateKey };
}

function dnskeyPublicKey(privateKey: KeyObject): Buffer {
  const jwk = createPublicKey(privateKey).export({ format: "jwk" });
  return Buffer.concat([Buffer.from(jwk.x!, "base64url"), Buffer.from(jwk.y!, "base64url")]);
}

/** DNSKEY RDATA: flags, protocol 3, algorithm, public key. */
export function dnskeyRdata(flags: number, publicKey: Buffer): Buffer {
  const head = Buffer.alloc(4);
  head.writeUInt16BE(flags, 0);
  head[2] = 3;
  head[3] = ALGORITHM;
  return Buffer.concat([head, publicKey]);
}

/** RFC 4034 Appendix B: the key tag is a 16-bit sum over the DNSKEY RDATA. */
export function keyTag(rdata: Buffer): number {
  let ac = 0;
  for (let i = 0; i < rdata.length; i++) ac += i & 1 ? rdata[i] : rdata[i] << 8;
  ac += (ac >> 16) & 0xffff;
  return ac & 0xffff;
}

/** The DS digest (SHA-256) of a zone's key-signing key: over the owner name in wire form and the DNSKEY RDATA (RFC 4034 §5.1.4). */
export function dsDigest(zone: string, flags: number, publicKey: Buffer): Buffer {
  return createHash("sha256").update(nameWire(zone.toLowerCase())).update(dnskeyRdata(flags, publicKey)).digest();
}

/** An ECDSA P-256 signature over `data` in the fixed-size r | s form DNSSEC uses (RFC 6605 §4), not DER. */
export function signData(key: SigningKey, data: Buffer): Buffer {
  return sign("sha256", data, { key: key.privateKey, dsaEncoding: "ieee-p1363" });
}
