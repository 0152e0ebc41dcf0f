import { createPrivateKey, X509Certificate, type KeyObject } from "node:crypto";
import { EdgeErrors } from "../errors.js";

/** The longest certificate chain and key text taken (a leaf and a few intermediates are a few KiB). */
const MAX_CHAIN_CHARS = 64 * 1024;
const MAX_KEY_CHARS = 16 * 1024;
const MAX_CHAIN_CERTIFICATES = 10;
export const BUNDLE_METHODS = ["ubiquitous", "optimal", "force"] as const;

/** What is read from an uploaded certificate and key, checked: what the row stores and the API shows. */
export interface CheckedCertificate {
  certPem: string;
  keyPem: string;
  hosts: string[];
  issuer: string;
  signature: string;
  expiresOn: number;
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[A-Za-z0-9+/=\s]+?-----END CERTIFICATE-----/g;

/**
 * Checks an upload for `zoneName`: the PEM chain (leaf first) parses, the key parses and is the leaf's, the leaf is
 * valid now, and at least one of its names is the zone or under it. Refuses with a 400 naming what is wrong;
 * never echoes the key.
 */
export function checkCertificate(certificate: unknown, privateKey: unknown, zoneName: string, now = Date.now()): CheckedCertificate {
  if (typeof certificate !== "string" || certificate.trim() === "")
    throw EdgeErrors.invalidCertificate('"certificate" must be the PEM certificate (and intermediates)');
  if (typeof privateKey !== "string" || privateKey.trim() === "")
    throw EdgeErrors.invalidCertificate('"private_key" must be the PEM private key', "/private_key");
  if (certificate.length > MAX_CHAIN_CHARS) throw EdgeErrors.invalidCertificate(`The certificate chain is longer than ${MAX_CHAIN_CHARS} characters`);
  if (privateKey.length > MAX_KEY_CHARS) throw EdgeErrors.invalidCertificate(`The private key is longer than ${MAX_KEY_CHARS} characters`, "/private_key");
  const blocks = certificate.match(PEM_CERTIFICATE) ?? [];
  if (blocks.length === 0) throw EdgeErrors.invalidCertificate("The certificate is not a PEM certificate (-----BEGIN CERTIFICATE-----)");
  if (blocks.length > MAX_CHAIN_CERTIFICATES) throw EdgeErrors.invalidCertificate(`The chain has more than ${MAX_CHAIN_CERTIFICATES} certificates`);
  let chain: X509Certificate[];
  try {
    chain = blocks.map((b) => new X509Certificate(b));
  } catch {
    throw EdgeErrors.invalidCertificate("The certificate could not be parsed");
  }
  let key: KeyObject;
  try {
    key = createPrivateKey(privateKey);
  } catch {
    throw EdgeErrors.invalidCertificate("The private key could not be parsed (PEM, unencrypted)", "/private_key");
  }
  const leaf = chain[0];
  if (!leaf.checkPrivateKey(key)) throw EdgeErrors.invalidCertificate("The private key does not match the certificate", "/private_key");
  const notAfter = Date.parse(leaf.validTo);
  if (!(notAfter > now)) throw EdgeErrors.invalidCertificate(`The certificate expired on ${new Date(notAfter).toISOString()}`);
  if (Date.parse(leaf.validFrom) > now)
    throw EdgeErrors.invalidCertificate(`The certificate is not valid before ${new Date(Date.parse(leaf.validFrom)).toISOString()}`);
  for (let i = 1; i < chain.length; i++)
    if (!chain[i - 1].checkIssued(chain[i])) throw EdgeErrors.invalidCertificate(`Certificate ${i + 1} of the chain did not issue certificate ${i}`);
  const hosts = namesOf(leaf).filter((n) => inZone(n, zoneName));
  if (hosts.length === 0)
    throw EdgeErrors.invalidCertificate(
      `The certificate names no host of the zone ${zoneName} (its names: ${namesOf(leaf).slice(0, 10).join(", ") || "none"})`,
    );
  return {
    certPem: blocks.map((b) => b.trim()).join("\n") + "\n",
    keyPem: key.export({ type: "pkcs8", format: "pem" }).toString(),
    hosts,
    issuer: organisation(leaf.issuer),
    signature: signatureOf(leaf),
    expiresOn: notAfter,
  };
}

/** The leaf's DNS names (subject alternative names; the common name when it has none), lower case. */
function namesOf(leaf: X509Certificate): string[] {
  const san = leaf.subjectAltName;
  const names = san
    ? san
        .split(/,\s*/)
        .filter((e) => e.startsWith("DNS:"))
        .map((e) => e.slice(4))
    : (/(?:^|\n)CN=([^\n]+)/.exec(leaf.subject)?.[1] ?? "").split(/\s+/).filter(Boolean);
  return [...new Set(names.map((n) => n.toLowerCase().replace(/\.$/, "")))];
}

/** `name` (or, for `*.x`, `x`) is the zone or under it. */
const inZone = (name: string, zone: string) => {
  const base = name.startsWith("*.") ? name.slice(2) : name;
  return base === zone || base.endsWith(`.${zone}`);
};

/** The issuer's organisation (what the hosted API shows, e.g. "Let's Encrypt"), else its common name. */
function organisation(issuer: string): string {
  return /(?:^|\n)O=([^\n]+)/.exec(issuer)?.[1] ?? /(?:^|\n)CN=([^\n]+)/.exec(issuer)?.[1] ?? "unknown";
}

/** The hosted names of the leaf's signature algorithm (SHA256WithRSA, ECDSAWithSHA256, …), from its key type. */
function signatureOf(leaf: X509Certificate): string {
  const type = leaf.publicKey.asymmetricKeyType;
  if (type === "ec") return "ECDSAWithSHA256";
  if (type === "ed25519") return "Ed25519";
  return "SHA256WithRSA";
}
