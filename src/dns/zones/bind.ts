import { EdgeError } from "../../core/errors.js";
import type { DnsConfig } from "../config.js";
import { DnsCodes, DnsErrors } from "../errors.js";
import { effectiveTtl, RECORD_TYPES, type DnsRecord, type RecordType } from "../model.js";
import { absolute } from "../records/fields.js";
import { TYPES } from "../records/types.js";
import type { ZoneDraft, ZoneState } from "./zone-state.js";

const PROXIED_TAG = "cf_tags=cf-proxied:";

const fq = (n: string) => `${n}.`;

/** The SOA rdata as presentation text. */
function soaText(zs: ZoneState, cfg: DnsConfig): string {
  const s = zs.zone.settings.soa;
  return `${fq(s.mname ?? cfg.nameServers[0])} ${fq(s.rname)} ${zs.zone.serial} ${s.refresh} ${s.retry} ${s.expire} ${s.min_ttl}`;
}

/**
 * Record text with control characters written as \DDD (RFC 1035). Content may hold them (a TXT string is any bytes);
 * written raw, a line break in a record ended its line in the file, and what followed was read back as more records.
 */
const presentation = (text: string) =>
  // eslint-disable-next-line no-control-regex
  text.replace(/[\x00-\x08\x0a-\x1f\x7f]/g, (c) => `\\${String(c.charCodeAt(0)).padStart(3, "0")}`);

/** A BIND zone file of the zone: SOA, apex NS, then every record (proxied ones marked as the hosted API marks them). */
export function exportZone(zs: ZoneState, cfg: DnsConfig): string {
  const z = zs.zone;
  const lines = [
    `;; Zone: ${z.name}`,
    `;; Exported: ${new Date().toISOString()}`,
    `$ORIGIN ${fq(z.name)}`,
    "",
    ";; SOA Record",
    `${fq(z.name)}\t${z.settings.soa.ttl}\tIN\tSOA\t${soaText(zs, cfg)}`,
    "",
    ";; NS Records",
    ...cfg.nameServers.map((ns) => `${fq(z.name)}\t${z.settings.ns_ttl}\tIN\tNS\t${fq(ns)}`),
  ];
  const records = [...zs.records.values()].sort((a, b) => RECORD_TYPES.indexOf(a.type) - RECORD_TYPES.indexOf(b.type) || a.name.localeCompare(b.name));
  let type = "";
  for (const r of records) {
    if (r.type !== type) lines.push("", `;; ${r.type} Records`);
    type = r.type;
    const note = r.proxied ? ` ; ${PROXIED_TAG}true` : "";
    lines.push(`${fq(r.name)}\t${effectiveTtl(r)}\tIN\t${r.type}\t${presentation(TYPES[r.type].text(r))}${note}`);
  }
  return lines.join("\n") + "\n";
}

/** Splits a zone file into logical entries: comments removed (the proxied tag kept), parentheses joined. */
function* entries(text: string): Generator<{ line: number; text: string; proxied?: boolean; indented: boolean }> {
  // Counted before splitting: a file of nothing but newlines would otherwise cost millions of strings.
  for (let i = text.indexOf("\n"), n = 1; i >= 0; i = text.indexOf("\n", i + 1)) {
    if (++n > MAX_IMPORT_LINES) throw importError(n, `a zone file has at most ${MAX_IMPORT_LINES} lines`);
  }
  const rows = text.split(/\r?\n/);
  let buf = "";
  let start = 0;
  let depth = 0;
  let proxied: boolean | undefined;
  let indented = false;
  for (let i = 0; i < rows.length; i++) {
    let row = rows[i];
    let inQuote = false;
    let cut = row.length;
    for (let j = 0; j < row.length; j++) {
      const c = row[j];
      if (c === "\\") j++;
      else if (c === '"') inQuote = !inQuote;
      else if (!inQuote && c === ";") {
        cut = j;
        break;
      } else if (!inQuote && c === "(") depth++;
      else if (!inQuote && c === ")") depth--;
    }
    const comment = row.slice(cut);
    const tag = comment.indexOf(PROXIED_TAG);
    if (tag >= 0) proxied = comment.slice(tag + PROXIED_TAG.length).startsWith("true");
    row = row.slice(0, cut);
    if (!buf) {
      start = i + 1;
      indented = /^\s/.test(row);
    }
    buf += " " + row;
    if (buf.length > MAX_ENTRY_CHARS) throw importError(start, `an entry is at most ${MAX_ENTRY_CHARS} characters`);
    if (depth > 0) continue;
    if (depth < 0) throw importError(i + 1, "unbalanced parentheses");
    const joined = buf.replace(/[()]/g, " ").trim();
    if (joined) yield { line: start, text: joined, proxied, indented };
    buf = "";
    proxied = undefined;
  }
  if (depth !== 0) throw importError(start, "unbalanced parentheses");
}

const importError = DnsErrors.zoneFileLine;

/**
 * The most records one import may carry. An import is validated a part at a time (IMPORT_ENTRIES_PER_TURN) but
 * committed as one transaction, checked against the zone as a whole, and its draft is held in memory until then;
 * 200,000 records in one go stalled the server for 25 s (loaded machine). Larger zones go in parts.
 */
export const MAX_IMPORT_RECORDS = 10_000;
/**
 * Entries of a zone file read and validated between two turns of the event loop: a few milliseconds of work (about
 * 0.1 ms a record on a busy machine), so queries and other requests are served while a large file is read.
 */
const IMPORT_ENTRIES_PER_TURN = 100;
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
/** Lines of a zone file: room for comments and records spread over lines, while blank lines alone cannot stall. */
export const MAX_IMPORT_LINES = 10 * MAX_IMPORT_RECORDS;
/** One entry (a line, or the lines a parenthesis joins): twice the longest record content a record may have. */
const MAX_ENTRY_CHARS = 32_768;

const TTL_UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400, w: 604800 };
function parseTtl(t: string): number | undefined {
  if (/^\d+$/.test(t)) return Number(t);
  const m = /^(\d+[smhdw])+$/i.test(t) ? t.match(/\d+[smhdw]/gi) : null;
  return m ? m.reduce((n, p) => n + Number(p.slice(0, -1)) * TTL_UNITS[p.slice(-1).toLowerCase()], 0) : undefined;
}

/**
 * Reads a BIND zone file into the draft. SOA and apex NS are the platform's own and are skipped, as
 * are records identical to existing ones; any other error fails the whole import with its line number.
 */
export async function importZone(text: string, draft: ZoneDraft, proxiedDefault: boolean, add: (body: Record<string, unknown>) => DnsRecord) {
  const zone = draft.zone.zone.name;
  let origin = zone;
  let defaultTtl: number | undefined;
  let owner = zone;
  let parsed = 0;
  let entriesRead = 0;
  let added = 0;
  let sinceTurn = 0;
  for (const e of entries(text)) {
    if (++sinceTurn === IMPORT_ENTRIES_PER_TURN) {
      sinceTurn = 0;
      await turn();
    }
    const matches = [...e.text.matchAll(/\S+/g)];
    const words = matches.map((m) => m[0]);
    if (words[0].startsWith("$")) {
      const d = words[0].toUpperCase();
      if (d === "$ORIGIN" && words[1]) origin = absolute(words[1].toLowerCase(), origin);
      else if (d === "$TTL" && words[1] && parseTtl(words[1]) !== undefined) defaultTtl = parseTtl(words[1]);
      else throw importError(e.line, `unsupported directive ${words[0]}`);
      continue;
    }
    let i = 0;
    if (!e.indented) owner = absolute(words[i++].toLowerCase(), origin);
    let ttl = defaultTtl;
    let type: string | undefined;
    for (; i < words.length && !type; i++) {
      const w = words[i].toUpperCase();
      if (w === "IN") continue;
      if (parseTtl(w) !== undefined) ttl = parseTtl(w);
      else type = w;
    }
    if (!type) throw importError(e.line, "no record type");
    const rdata = i < words.length ? e.text.slice(matches[i].index).trim() : "";
    // Counted before any is skipped: skipped ones cost their parsing too.
    if (++entriesRead > MAX_IMPORT_RECORDS) throw DnsErrors.zoneFileTooManyRecords(MAX_IMPORT_RECORDS);
    if (type === "SOA" || (type === "NS" && owner === zone)) continue;
    if (!(RECORD_TYPES as readonly string[]).includes(type)) throw importError(e.line, `record type ${type} is not supported`);
    parsed++;
    const spec = TYPES[type as RecordType];
    const proxied = spec.proxiable && (e.proxied ?? proxiedDefault);
    // Zone files may carry TTLs outside the API's range; they are brought into it rather than refused.
    const apiTtl = ttl === undefined ? 1 : Math.min(86400, Math.max(60, ttl));
    try {
      add({ type, name: `${owner}.`, ttl: apiTtl, proxied, ...spec.fromText(rdata, origin) });
      added++;
    } catch (err) {
      if (err instanceof EdgeError && err.errors[0].code === DnsCodes.identicalRecord) continue;
      if (err instanceof EdgeError) throw DnsErrors.zoneFileRecord(e.line, err);
      throw err;
    }
  }
  return { recs_added: added, total_records_parsed: parsed };
}
