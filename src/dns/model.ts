/** Record types the API stores and the server answers. */
export const RECORD_TYPES = [
  "A",
  "AAAA",
  "CNAME",
  "MX",
  "TXT",
  "CAA",
  "SRV",
  "SVCB",
  "HTTPS",
  "PTR",
  "NS",
  "DS",
  "DNSKEY",
  "URI",
  "NAPTR",
  "SSHFP",
  "TLSA",
  "SMIMEA",
  "CERT",
] as const;
export type RecordType = (typeof RECORD_TYPES)[number];

export interface RecordSettings {
  ipv4_only?: boolean;
  ipv6_only?: boolean;
  flatten_cname?: boolean;
}

/** A stored record. `name` is canonical (lowercase FQDN without the trailing dot). */
export interface DnsRecord {
  id: string;
  zone_id: string;
  name: string;
  type: RecordType;
  content: string;
  data: Record<string, unknown> | null;
  priority: number | null;
  /** 1 = automatic (served as 300). */
  ttl: number;
  proxied: boolean;
  comment: string | null;
  tags: string[];
  settings: RecordSettings;
  created_on: string;
  modified_on: string;
  comment_modified_on: string | null;
  tags_modified_on: string | null;
}

export interface Soa {
  mname: string | null;
  rname: string;
  refresh: number;
  retry: number;
  expire: number;
  min_ttl: number;
  ttl: number;
}

export interface ZoneSettings {
  soa: Soa;
  flatten_all_cnames: boolean;
  ns_ttl: number;
}

/** "full": its records are managed here; "secondary": copied from a primary by zone transfer (transfers/secondary.ts). */
export type ZoneType = "full" | "secondary";

export interface Zone {
  id: string;
  account_id: string;
  name: string;
  paused: boolean;
  created_on: string;
  modified_on: string;
  activated_on: string | null;
  serial: number;
  settings: ZoneSettings;
  /** Absent means "full" (stores that predate secondary zones, PostgreSQL, which has none). */
  type?: ZoneType;
}

export const AUTO_TTL = 300;
export const effectiveTtl = (r: { ttl: number; proxied: boolean }) => (r.proxied || r.ttl === 1 ? AUTO_TTL : r.ttl);
