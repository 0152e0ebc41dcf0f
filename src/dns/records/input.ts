import type { BlockList } from "node:net";
import { DnsErrors } from "../errors.js";
import { RECORD_TYPES, type DnsRecord, type RecordSettings, type RecordType } from "../model.js";
import { checkRecordName, resolveRecordName } from "../zones/names.js";
import { parseTxt } from "./txt.js";
import { TYPES, type RecordValue } from "./types.js";
import type { ZoneService } from "../zones/zone-service.js";
import { newId, now, type ZoneDraft } from "../zones/zone-state.js";

export type EditMode = "create" | "put" | "patch";

const TAG = /^[A-Za-z0-9_-]+(:.*)?$/;

/**
 * The longest content taken in its text form, checked before it is parsed. The hosted API allows 4,096 bytes of a
 * record on the wire (checked per type where the text does not tell, e.g. TXT); no text form of that is longer
 * than this, and without a bound a 10 MB body became one record the server then had to answer with.
 */
const MAX_CONTENT_CHARS = 16_384;

function readType(v: unknown): RecordType {
  const t = typeof v === "string" ? v.toUpperCase() : "";
  if (!(RECORD_TYPES as readonly string[]).includes(t)) {
    throw DnsErrors.typeInvalid(String(v ?? ""), RECORD_TYPES);
  }
  return t as RecordType;
}

function readTtl(v: unknown): number {
  if (v === undefined || v === null) return 1;
  if (typeof v !== "number" || !Number.isInteger(v) || (v !== 1 && (v < 60 || v > 86400))) {
    throw DnsErrors.ttlInvalid();
  }
  return v;
}

function readComment(v: unknown): string | null {
  if (v === undefined || v === null || v === "") return null;
  if (typeof v !== "string" || v.length > 500) throw DnsErrors.commentInvalid();
  return v;
}

function readTags(v: unknown): string[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.some((t) => typeof t !== "string" || !TAG.test(t) || t.length > 255)) {
    throw DnsErrors.tagsInvalid();
  }
  return [...new Set(v as string[])];
}

function readSettings(v: unknown, type: RecordType): RecordSettings {
  if (v === undefined || v === null) return {};
  if (typeof v !== "object" || Array.isArray(v)) throw DnsErrors.settingsNotObject();
  const out: RecordSettings = {};
  for (const [k, val] of Object.entries(v as Record<string, unknown>)) {
    if (!["ipv4_only", "ipv6_only", "flatten_cname"].includes(k)) continue;
    // null is "not set": Terraform's provider sends a setting removed from its config as null on the PUT.
    if (val === null) continue;
    if (typeof val !== "boolean") throw DnsErrors.settingNotBoolean(k);
    if (k === "flatten_cname" && type !== "CNAME" && val) throw DnsErrors.flattenCnameOnly();
    out[k as keyof RecordSettings] = val;
  }
  if (out.ipv4_only && out.ipv6_only) throw DnsErrors.addressFamilyConflict();
  return out;
}

/** The value's content in one form: TXT quoted or not is the same record. */
const canonicalContent = (type: RecordType, v: RecordValue) => (type === "TXT" ? parseTxt(v.content).content : v.content.toLowerCase());
const sameValue = (type: RecordType, a: RecordValue, b: RecordValue) =>
  canonicalContent(type, a) === canonicalContent(type, b) && a.priority === b.priority && JSON.stringify(a.data) === JSON.stringify(b.data);

/**
 * Builds the record an API call asks for and checks it against the draft (the zone with the changes
 * made so far in this call). Nothing is written here; the caller commits the draft when all is well.
 */
export function buildRecord(
  zones: Pick<ZoneService, "recordsAt">,
  draft: ZoneDraft,
  body: unknown,
  mode: EditMode,
  opts: { id?: string; platform: BlockList; defaultProxied?: boolean; managedBy?: (r: DnsRecord) => string | undefined },
): DnsRecord {
  if (!body || typeof body !== "object" || Array.isArray(body)) throw DnsErrors.bodyNotObject();
  const b = body as Record<string, unknown>;
  const existing = opts.id ? draft.get(opts.id) : undefined;
  if (opts.id && !existing) throw DnsErrors.recordNotFound();
  const base = mode === "patch" ? existing : undefined;
  // null counts as "not given" (some clients send `"data": null`, `"proxied": null`); comment and tags use null to clear.
  const has = (k: string) => b[k] !== undefined && b[k] !== null;
  const sent = (k: string) => b[k] !== undefined;

  const type = has("type") ? readType(b.type) : base ? base.type : readType(b.type);
  const spec = TYPES[type];
  const zoneName = draft.zone.zone.name;
  const name = has("name") || !base ? resolveRecordName(b.name, zoneName) : base.name;
  checkRecordName(name, zoneName, spec.hostName);

  // A patch that changes the value sends content or data; otherwise the stored value is re-checked as is.
  const valueBody =
    base && !has("content") && !has("data") && !has("priority") && base.type === type
      ? { content: base.content, data: base.data, priority: base.priority }
      : {
          content: has("content") ? b.content : base && !has("data") ? base.content : undefined,
          data: has("data") ? b.data : undefined,
          priority: has("priority") ? b.priority : (base?.priority ?? undefined),
        };
  if (typeof valueBody.content === "string" && valueBody.content.length > MAX_CONTENT_CHARS) {
    throw DnsErrors.contentInvalid(type, `longer than ${MAX_CONTENT_CHARS} characters`);
  }
  const value = spec.parse(valueBody, opts.platform);
  if (type === "CNAME" && value.content === name) throw DnsErrors.cnameToItself();

  if (has("proxied") && typeof b.proxied !== "boolean") throw DnsErrors.proxiedNotBoolean();
  // Terraform's provider sends `private_routing` when its config sets it; nothing here routes to private networks.
  if (has("private_routing") && b.private_routing !== false) throw DnsErrors.privateRoutingUnsupported();
  const proxied = has("proxied") ? (b.proxied as boolean) : (base?.proxied ?? (spec.proxiable && (opts.defaultProxied ?? false)));
  if (proxied && !spec.proxiable) throw DnsErrors.notProxiable(type);
  const ttlIn = has("ttl") ? readTtl(b.ttl) : (base?.ttl ?? 1);
  // Proxied records always have automatic TTL, as the hosted API does.
  const ttl = proxied ? 1 : ttlIn;
  const comment = sent("comment") || !base ? readComment(b.comment) : base.comment;
  const tags = sent("tags") || !base ? readTags(b.tags) : base.tags;
  const settings = sent("settings") || !base ? readSettings(b.settings, type) : base.settings;

  const id = existing?.id ?? newId();
  if (opts.managedBy) checkManaged(draft, id, name, type, existing, opts.managedBy);
  checkConflicts(draft, id, name, type, value);
  if (type === "CNAME" && proxied) checkProxiedChain(zones, draft, name, value.content);

  const t = now();
  const record: DnsRecord = {
    id,
    zone_id: draft.zone.zone.id,
    name,
    type,
    content: value.content,
    data: value.data,
    priority: value.priority,
    ttl,
    proxied,
    comment,
    tags,
    settings,
    created_on: existing?.created_on ?? t,
    modified_on: t,
    comment_modified_on: comment !== (existing?.comment ?? null) ? (comment === null ? null : t) : (existing?.comment_modified_on ?? null),
    tags_modified_on: JSON.stringify(tags) !== JSON.stringify(existing?.tags ?? []) ? (tags.length ? t : null) : (existing?.tags_modified_on ?? null),
  };
  draft.set(record);
  return record;
}

/**
 * Records another area keeps (a Worker Custom Domain's) are not the API's to change, and a name holding one answers
 * with the edge's addresses: an A, AAAA or CNAME beside it would contradict that (the hosted API's code 81062).
 */
function checkManaged(
  draft: ZoneDraft,
  id: string,
  name: string,
  type: RecordType,
  existing: DnsRecord | undefined,
  managedBy: (r: DnsRecord) => string | undefined,
): void {
  const owner = existing && managedBy(existing);
  if (owner) throw DnsErrors.managedRecord(owner);
  if ((type === "A" || type === "AAAA" || type === "CNAME") && draft.at(name).some((r) => r.id !== id && managedBy(r) !== undefined))
    throw DnsErrors.managedByWorkers(type);
}

/**
 * CNAME owns its name alone, and so does a delegation (NS below the apex: queries there are referred away, so
 * other records at that name could never be answered); identical records are refused. Codes as the hosted API.
 */
function checkConflicts(draft: ZoneDraft, id: string, name: string, type: RecordType, value: RecordValue): void {
  const others = draft.at(name).filter((r) => r.id !== id);
  if (others.some((o) => o.type === type && sameValue(type, o, value))) throw DnsErrors.identicalRecord();
  if (name !== draft.zone.zone.name) {
    // DS records belong at a delegation point (they are the parent's half of DNSSEC for the child).
    const delegation = type === "NS" ? others.some((o) => o.type !== "NS" && o.type !== "DS") : type !== "DS" && others.some((o) => o.type === "NS");
    if (delegation) throw DnsErrors.nsConflict();
  }
  if (type === "CNAME" && others.length > 0) throw DnsErrors.cnameBlocksOthers();
  if (type !== "CNAME" && others.some((o) => o.type === "CNAME")) throw DnsErrors.cnameExists();
}

/** A proxied CNAME whose chain stays inside our zones must end at an A or AAAA record. */
function checkProxiedChain(zones: Pick<ZoneService, "recordsAt">, draft: ZoneDraft, name: string, target: string): void {
  const seen = new Set([name]);
  let t = target;
  for (let hops = 0; hops < 16; hops++) {
    const recs = zones.recordsAt(t, draft);
    if (recs === undefined) return; // outside our zones: the origin is elsewhere
    if (recs.some((r) => r.type === "A" || r.type === "AAAA")) return;
    const next = recs.find((r) => r.type === "CNAME");
    if (!next || seen.has(next.content)) break;
    seen.add(t);
    t = next.content;
  }
  throw DnsErrors.proxiedChain(name, t);
}
