import { ALGORITHM, DIGEST_TYPE, DNSKEY_TTL, dsDigest, KEY_TYPE, KSK_FLAGS } from "./keys.js";
import type { RolloverProgress } from "./dnssec-service.js";
import type { StoredKey, ZoneDnssec } from "./store.js";

/** The DS record of a key-signing key in zone-file form, as a registrar asks for it. */
export function dsRecord(zone: string, k: StoredKey): { digest: string; ds: string } {
  const digest = dsDigest(zone, KSK_FLAGS, Buffer.from(k.public_key, "base64")).toString("hex").toUpperCase();
  return { digest, ds: `${zone}. ${DNSKEY_TTL} IN DS ${k.key_tag} ${ALGORITHM} ${DIGEST_TYPE} ${digest}` };
}

/**
 * The v4 DNSSEC object. `status` is "pending" during the first DNSKEY TTL after signing starts (the DS must not be
 * published at the parent before resolvers can have seen the DNSKEY set), then "active". The key fields describe
 * the newest signing KSK (the one to put at the registrar; during a KSK rollover, the new one). `ds_records` and
 * `rollover` are ours: every DS that is valid now, and the rollover in progress.
 */
export function dnssecView(zone: string, s: ZoneDnssec | undefined, progress: RolloverProgress | undefined, at = Date.now()) {
  const base = { dnssec_multi_signer: false, dnssec_presigned: false, dnssec_use_nsec3: false };
  if (!s || s.status !== "active")
    return {
      ...base,
      algorithm: null,
      digest: null,
      digest_algorithm: null,
      digest_type: null,
      ds: null,
      flags: null,
      key_tag: null,
      key_type: null,
      modified_on: s?.modified_on ?? null,
      public_key: null,
      status: "disabled" as const,
      ds_records: [],
      rollover: null,
    };
  const ksks = s.keys.filter((k) => k.role === "ksk" && k.state === "active");
  const ksk = ksks.at(-1)!;
  const pending = at < Date.parse(s.enabled_on ?? s.modified_on) + DNSKEY_TTL * 1000;
  return {
    ...base,
    algorithm: String(ALGORITHM),
    ...dsRecord(zone, ksk),
    digest_algorithm: "SHA256",
    digest_type: String(DIGEST_TYPE),
    flags: KSK_FLAGS,
    key_tag: ksk.key_tag,
    key_type: KEY_TYPE,
    modified_on: s.modified_on,
    public_key: ksk.public_key,
    status: pending ? ("pending" as const) : ("active" as const),
    ds_records: ksks.map((k) => dsRecord(zone, k).ds),
    rollover: progress ?? null,
  };
}
