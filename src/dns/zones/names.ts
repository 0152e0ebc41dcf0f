import { domainToASCII } from "node:url";
import { getDomain } from "tldts";
import { DnsErrors } from "../errors.js";

/** Names are kept lowercase, fully qualified, without the trailing dot: "www.example.com". */
export const canonical = (name: string) => name.toLowerCase().replace(/\.$/, "");

export const isInZone = (name: string, zone: string) => name === zone || name.endsWith("." + zone);

/** Converts a Unicode name to its ASCII (punycode) form; returns "" when that is impossible. */
export function toAscii(name: string): string {
  if (/^[\x21-\x7e]*$/.test(name)) return name;
  const lead = name.startsWith("*.") ? "*." : "";
  const ascii = domainToASCII(lead ? name.slice(2) : name);
  return ascii ? lead + ascii : "";
}

/**
 * Resolves a record name from API input: "@" is the apex, a name ending with a dot or with the zone
 * is absolute, anything else is relative to the zone. An absolute name outside the zone is refused.
 */
export function resolveRecordName(input: unknown, zone: string): string {
  if (typeof input !== "string" || input.trim() === "") throw DnsErrors.nameInvalid();
  const raw = toAscii(input.trim());
  if (!raw) throw DnsErrors.nameInvalid(`"${input}" cannot be converted to punycode`);
  if (raw === "@") return zone;
  const lower = raw.toLowerCase();
  if (lower.endsWith(".")) {
    const abs = lower.slice(0, -1);
    if (!isInZone(abs, zone)) throw DnsErrors.nameInvalid(`${abs} is not in the zone ${zone}`);
    return abs;
  }
  if (isInZone(lower, zone)) return lower;
  return `${lower}.${zone}`;
}

const HOST_LABEL = /^[a-z_]([a-z0-9_-]*[a-z0-9])?$/;
const ANY_LABEL = /^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?$/;

/**
 * Checks the labels below the apex. Host records (A, AAAA, CNAME) follow the host-name rule (RFC 952/1123, plus underscores): each label
 * starts with a letter (or underscore), ends with a letter or digit, has only letters, digits, hyphens
 * and underscores; other types accept digits first and underscores anywhere (SRV, DKIM, TLSA names).
 * A leftmost "*" makes a wildcard.
 */
export function checkRecordName(name: string, zone: string, hostRules: boolean): void {
  if (name.length > 253) throw DnsErrors.nameInvalid("longer than 253 characters");
  if (name === zone) return;
  const labels = name.slice(0, -(zone.length + 1)).split(".");
  labels.forEach((label, i) => {
    if (i === 0 && label === "*") return;
    if (label.length === 0) throw DnsErrors.nameInvalid("empty label");
    if (label.length > 63) throw DnsErrors.nameInvalid(`the label "${label}" is longer than 63 characters`);
    const re = hostRules ? HOST_LABEL : ANY_LABEL;
    if (!re.test(label)) {
      const why = hostRules
        ? "a label must start with a letter, end with a letter or digit, and contain only letters, digits, hyphens and underscores"
        : "a label may contain only letters, digits, hyphens and underscores";
      throw DnsErrors.nameInvalid(`"${label}": ${why}`);
    }
  });
}

/** A host name in record content (CNAME target, MX exchange, ...): returns it canonical, or undefined if invalid. */
export function parseHostname(value: unknown, allowRoot = false): string | undefined {
  if (typeof value !== "string") return undefined;
  const raw = toAscii(value.trim());
  if (allowRoot && raw === ".") return ".";
  const name = canonical(raw);
  if (!name || name.length > 253) return undefined;
  for (const label of name.split(".")) {
    if (!/^[a-z0-9_*]([a-z0-9_-]{0,61}[a-z0-9_])?$/.test(label)) return undefined;
  }
  return name;
}

/** Labels of a zone name, which needs at least two (no TLD-only zones). */
export function parseZoneName(value: unknown): string | undefined {
  const name = parseHostname(value);
  if (!name || !name.includes(".") || name.includes("*") || name.includes("_")) return undefined;
  return name;
}

/**
 * Refuses a zone name that is a public suffix (`co.uk`, `github.io`) or a top-level domain: the names under it
 * belong to whoever registers them, and since a zone inside another account's zone is refused, one account holding
 * `co.uk` would keep every other account from creating its `example.co.uk`. Both sections of the Public Suffix List
 * count: the private section (`github.io`, dynamic-DNS domains) is as shared as the ICANN one. An operator who owns
 * such a name may let tenants create it (`--dns-allow-zone`, `allowed`). A TLD the list does not know (`.test`,
 * `.internal`) counts as one too (the list's default rule "*"), so `example.test` is registrable and `test` is not.
 */
export function checkRegistrable(name: string, allowed: ReadonlySet<string>): void {
  if (allowed.has(name)) return;
  if (getDomain(name, { allowPrivateDomains: true }) === null) throw DnsErrors.notRegistrable(name);
}
