import { z } from "zod";
import { parseWith } from "../../core/http/validate.js";
import { DnsCodes, DnsErrors } from "../errors.js";
import type { Soa, ZoneSettings } from "../model.js";
import { parseHostname } from "./names.js";

/** SOA fields: the defaults a new zone gets and the bounds an edit must stay within (docs/dns.md). */
const SOA_BOUNDS = {
  refresh: { def: 10000, min: 600, max: 86400 },
  retry: { def: 2400, min: 600, max: 3600 },
  expire: { def: 604800, min: 86400, max: 2419200 },
  ttl: { def: 3600, min: 1800, max: 3600 },
  min_ttl: { def: 1800, min: 60, max: 86400 },
} as const;

const DEFAULT_RNAME = "dns.edge-platform.test";

export function defaultZoneSettings(): ZoneSettings {
  return {
    soa: {
      mname: null,
      rname: DEFAULT_RNAME,
      refresh: SOA_BOUNDS.refresh.def,
      retry: SOA_BOUNDS.retry.def,
      expire: SOA_BOUNDS.expire.def,
      ttl: SOA_BOUNDS.ttl.def,
      min_ttl: SOA_BOUNDS.min_ttl.def,
    },
    flatten_all_cnames: false,
    ns_ttl: 86400,
  };
}

/**
 * RNAME from an e-mail address (RFC 1035 mailbox form): the `@` becomes a dot and a dot in the local part is
 * escaped (`first.last@example.com` → `first\.last.example.com`). A name already in DNS form is kept.
 */
export function rnameFromInput(value: string): string | undefined {
  const v = value.trim().replace(/\.$/, "");
  const at = v.lastIndexOf("@");
  if (at < 0) {
    // DNS form: escaped dots are allowed in the first label only.
    const m = /^((?:[^.\\]|\\.)+)\.(.+)$/.exec(v);
    if (!m || !parseHostname(m[2])) return undefined;
    return `${m[1]}.${m[2].toLowerCase()}`;
  }
  const local = v.slice(0, at);
  const domain = parseHostname(v.slice(at + 1));
  if (!local || !domain || /[\s@]/.test(local)) return undefined;
  return `${local.replace(/\\/g, "").replace(/\./g, "\\.")}.${domain}`;
}

const bounded = (k: keyof typeof SOA_BOUNDS) => z.number().int().min(SOA_BOUNDS[k].min).max(SOA_BOUNDS[k].max);

const soaPatch = z
  .object({
    mname: z.string().nullable().optional(),
    rname: z.string().optional(),
    refresh: bounded("refresh").optional(),
    retry: bounded("retry").optional(),
    expire: bounded("expire").optional(),
    ttl: bounded("ttl").optional(),
    min_ttl: bounded("min_ttl").optional(),
  })
  .strict();

/** The refusal of a hosted DNS setting this server does not have (zod puts the field's name in front). */
const onlyOff = (feature: string, off: string) => ({ message: `${feature} is not supported here; only ${off} is accepted` });

const settingsPatch = z
  .object({
    soa: soaPatch.optional(),
    flatten_all_cnames: z.boolean().optional(),
    ns_ttl: z.number().int().min(30).max(86400).optional(),
    // Settings of the hosted API for features this server does not have: accepted at the value settingsView
    // reports (clients send the whole object back), refused at any other, never stored and ignored.
    foundation_dns: z
      .boolean()
      .optional()
      .refine((v): boolean => v !== true, onlyOff("Foundation DNS", "false")),
    multi_provider: z
      .boolean()
      .optional()
      .refine((v): boolean => v !== true, onlyOff("Multi-provider DNS", "false")),
    secondary_overrides: z
      .boolean()
      .optional()
      .refine((v): boolean => v !== true, onlyOff("Secondary DNS overrides", "false")),
    zone_mode: z
      .enum(["standard", "cdn_only", "dns_only"])
      .optional()
      .refine((v): boolean => v === undefined || v === "standard", onlyOff("Zone modes other than standard", '"standard"')),
    nameservers: z
      .object({ type: z.string() })
      .passthrough()
      .optional()
      .refine(
        (v): boolean => v === undefined || v.type === "cloudflare.standard",
        onlyOff("Custom name server sets (every zone is served by the platform's name servers, set with --name-servers)", '{"type": "cloudflare.standard"}'),
      ),
    internal_dns: z
      .unknown()
      .optional()
      .refine((v): boolean => v == null, onlyOff("Internal DNS", "null")),
  })
  .strict();

/** Applies a PATCH body to settings; every bound and the cross-field rules are checked before anything changes. */
export function patchSettings(current: ZoneSettings, body: unknown): ZoneSettings {
  const p = parseWith(settingsPatch, body ?? {}, DnsCodes.soa);
  const soa: Soa = { ...current.soa };
  if (p.soa) {
    const { mname, rname, ...nums } = p.soa;
    Object.assign(soa, Object.fromEntries(Object.entries(nums).filter(([, v]) => v !== undefined)));
    if (mname !== undefined) {
      if (mname === null || mname === "") soa.mname = null;
      else {
        const h = parseHostname(mname);
        if (!h) throw DnsErrors.soaMname(mname);
        soa.mname = h;
      }
    }
    if (rname !== undefined) {
      const r = rnameFromInput(rname);
      if (!r) throw DnsErrors.soaRname(rname);
      soa.rname = r;
    }
  }
  if (soa.retry > soa.refresh) throw DnsErrors.soaRetryAboveRefresh(soa.retry, soa.refresh);
  if (soa.expire < soa.refresh) throw DnsErrors.soaExpireBelowRefresh(soa.expire, soa.refresh);
  return {
    soa,
    flatten_all_cnames: p.flatten_all_cnames ?? current.flatten_all_cnames,
    ns_ttl: p.ns_ttl ?? current.ns_ttl,
  };
}

/** The API view of DNS settings. */
export function settingsView(s: ZoneSettings, nameServers: string[]) {
  return {
    flatten_all_cnames: s.flatten_all_cnames,
    foundation_dns: false,
    multi_provider: false,
    nameservers: { type: "cloudflare.standard" },
    ns_ttl: s.ns_ttl,
    secondary_overrides: false,
    soa: { ...s.soa, mname: s.soa.mname ?? nameServers[0] },
    zone_mode: "standard",
  };
}
