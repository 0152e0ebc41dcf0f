import { isIP, type BlockList } from "node:net";
import { DnsErrors } from "../errors.js";
import type { RecordType } from "../model.js";
import { parseHostname } from "../zones/names.js";
import { absolute, checkField, Field, FieldError, fieldsFromText, fieldText, fieldWire, int, tokenize } from "./fields.js";
import { parseTxt, txtWireStrings } from "./txt.js";

/** What the API (or a zone file) says about a record's value. */
interface RecordBody {
  content?: unknown;
  data?: unknown;
  priority?: unknown;
}

/** The canonical value of a record. */
export interface RecordValue {
  content: string;
  data: Record<string, unknown> | null;
  priority: number | null;
}

interface TypeSpec {
  /** Only A, AAAA and CNAME can be proxied. */
  proxiable: boolean;
  /** Whether the host-name rules (zones/names.ts) apply to the record's name. */
  hostName: boolean;
  parse(body: RecordBody, platform: BlockList): RecordValue;
  /** Zone-file rdata. */
  text(v: RecordValue): string;
  /** Reads zone-file rdata (names relative to `origin`). */
  fromText(text: string, origin: string): RecordBody;
  /** dns-packet answer type and data. */
  wire(v: RecordValue): { type: string; data: unknown };
}

function hostContent(type: string, allowRoot = false) {
  return (body: RecordBody): string => {
    const h = parseHostname(body.content, allowRoot);
    if (!h) throw type === "CNAME" ? DnsErrors.cnameContent() : DnsErrors.contentInvalid(type, "it must be a fully qualified host name");
    return h;
  };
}

function hostType(type: "CNAME" | "NS" | "PTR"): TypeSpec {
  const read = hostContent(type);
  return {
    proxiable: type === "CNAME",
    hostName: type === "CNAME",
    parse: (body) => ({ content: read(body), data: null, priority: null }),
    text: (v) => `${v.content}.`,
    fromText: (text, origin) => ({ content: absolute(text.trim(), origin) }),
    wire: (v) => ({ type, data: v.content }),
  };
}

function address(family: 4 | 6): TypeSpec {
  const type = family === 4 ? "A" : "AAAA";
  return {
    proxiable: true,
    hostName: true,
    parse(body, platform) {
      const c = typeof body.content === "string" ? body.content.trim().toLowerCase() : "";
      if (isIP(c) !== family) {
        throw family === 4 ? DnsErrors.aContent() : DnsErrors.aaaaContent();
      }
      if (platform.check(c, family === 4 ? "ipv4" : "ipv6")) {
        throw DnsErrors.platformAddress(c);
      }
      // IPv6 in its canonical compressed form, so equal addresses compare equal (2001:db8:0::1 = 2001:db8::1).
      const content = family === 6 ? new URL(`http://[${c}]`).hostname.slice(1, -1) : c;
      return { content, data: null, priority: null };
    },
    text: (v) => v.content,
    fromText: (text) => ({ content: text.trim() }),
    wire: (v) => ({ type, data: v.content }),
  };
}

function readPriority(body: RecordBody, type: string): number {
  const data = body.data && typeof body.data === "object" ? (body.data as Record<string, unknown>) : {};
  const p = body.priority ?? data.priority;
  if (typeof p !== "number" || !Number.isInteger(p) || p < 0 || p > 65535) {
    throw DnsErrors.priorityRequired(type);
  }
  return p;
}

const mx: TypeSpec = {
  proxiable: false,
  hostName: false,
  parse(body) {
    const exchange = hostContent("MX", true)(body);
    return { content: exchange, data: null, priority: readPriority(body, "MX") };
  },
  text: (v) => `${v.priority} ${v.content === "." ? "." : v.content + "."}`,
  fromText(text, origin) {
    const [p, host] = text.trim().split(/\s+/);
    return { priority: Number(p), content: host === undefined ? undefined : absolute(host, origin) };
  },
  wire: (v) => ({ type: "MX", data: { preference: v.priority, exchange: v.content === "." ? "" : v.content } }),
};

/** The hosted API's largest record, in wire format. */
const MAX_RECORD_WIRE_BYTES = 4096;

const txt: TypeSpec = {
  proxiable: false,
  hostName: false,
  parse(body) {
    if (typeof body.content !== "string") throw DnsErrors.contentInvalid("TXT", "content must be a string");
    const { strings } = parseTxt(body.content);
    // As on the wire: each string of at most 255 bytes after a length byte (longer strings are split there).
    const wireBytes = txtWireStrings(strings).reduce((n, b) => n + 1 + b.length, 0);
    if (wireBytes > MAX_RECORD_WIRE_BYTES)
      throw DnsErrors.contentInvalid("TXT", `${wireBytes} bytes on the wire; a record holds at most ${MAX_RECORD_WIRE_BYTES}`);
    // Kept as written, quoted or not, as the hosted API answers it: Terraform's provider compares the content it
    // sent with the answer. The wire and zone files use the quoted form (parseTxt reads both).
    return { content: body.content.trim(), data: null, priority: null };
  },
  text: (v) => parseTxt(v.content).content,
  fromText: (text) => ({ content: text.trim() }),
  wire: (v) => ({ type: "TXT", data: txtWireStrings(parseTxt(v.content).strings) }),
};

const TYPE_NUMBERS: Partial<Record<RecordType, number>> = {
  SRV: 33,
  CAA: 257,
  SVCB: 64,
  HTTPS: 65,
  DS: 43,
  DNSKEY: 48,
  URI: 256,
  NAPTR: 35,
  SSHFP: 44,
  TLSA: 52,
  SMIMEA: 53,
  CERT: 37,
};

/**
 * A type whose value is a `data` object. `content` is the fields in presentation order, except that
 * SRV and URI leave out the priority, which is answered beside it (as the hosted API does).
 */
function structured(type: RecordType, fields: Field[], opts: { priorityOutside?: boolean; dataWithoutPriority?: boolean } = {}): TypeSpec {
  const contentFields = opts.priorityOutside ? fields.filter((f) => f.name !== "priority") : fields;
  const spec: TypeSpec = {
    proxiable: false,
    hostName: false,
    parse(body) {
      let raw: Record<string, unknown>;
      try {
        if (body.data !== undefined && body.data !== null) {
          if (typeof body.data !== "object" || Array.isArray(body.data)) throw new FieldError("data must be an object");
          raw = { ...(body.data as Record<string, unknown>) };
        } else if (typeof body.content === "string" && body.content.trim()) {
          // "weight port target" with the priority beside it, or all fields.
          const short = opts.priorityOutside && tokenize(body.content).length < fields.length;
          raw = fieldsFromText(short ? contentFields : fields, body.content);
        } else {
          throw new FieldError(`${type} records need a data object`);
        }
        if (fields.some((f) => f.name === "priority") && raw.priority === undefined && body.priority !== undefined) raw.priority = body.priority;
        const data: Record<string, unknown> = {};
        for (const f of fields) data[f.name] = checkField(f, raw[f.name], data);
        const content = contentFields
          .map((f) => fieldText(f, data[f.name], false))
          .join(" ")
          .trim();
        const priority = opts.priorityOutside ? (data.priority as number) : null;
        if (opts.dataWithoutPriority) delete data.priority;
        return { content, data, priority };
      } catch (e) {
        if (e instanceof FieldError) throw DnsErrors.dataInvalid(type, e.message);
        throw e;
      }
    },
    text(v) {
      const data: Record<string, unknown> = { ...v.data, priority: v.data?.priority ?? v.priority };
      return fields
        .map((f) => fieldText(f, data[f.name], true))
        .join(" ")
        .trim();
    },
    fromText: (text, origin) => {
      try {
        return { data: fieldsFromText(fields, text, origin) };
      } catch (e) {
        throw DnsErrors.zoneFileRdata(type, text, (e as Error).message);
      }
    },
    wire(v) {
      const data: Record<string, unknown> = { ...v.data, priority: v.data?.priority ?? v.priority };
      return { type: `UNKNOWN_${TYPE_NUMBERS[type]}`, data: Buffer.concat(fields.map((f) => fieldWire(f, data[f.name]))) };
    },
  };
  return spec;
}

const f = (name: string, spec: Field["spec"]): Field => ({ name, spec });
const digestLengths = { 1: 20, 2: 32, 4: 48 };
const svcb = (type: "SVCB" | "HTTPS") =>
  structured(type, [f("priority", int(2)), f("target", { kind: "host", allowRoot: true }), f("value", { kind: "svcparams" })]);
const tlsa = (type: "TLSA" | "SMIMEA") =>
  structured(type, [
    f("usage", int(1, { max: 3 })),
    f("selector", int(1, { max: 1 })),
    f("matching_type", int(1, { max: 2 })),
    f("certificate", { kind: "hex", lengthBy: "matching_type", lengths: { 1: 32, 2: 64 } }),
  ]);

export const TYPES: Record<RecordType, TypeSpec> = {
  A: address(4),
  AAAA: address(6),
  CNAME: hostType("CNAME"),
  NS: hostType("NS"),
  PTR: hostType("PTR"),
  MX: mx,
  TXT: txt,
  SRV: structured("SRV", [f("priority", int(2)), f("weight", int(2)), f("port", int(2)), f("target", { kind: "host", allowRoot: true })], {
    priorityOutside: true,
  }),
  URI: structured("URI", [f("priority", int(2)), f("weight", int(2)), f("target", { kind: "tail" })], { priorityOutside: true, dataWithoutPriority: true }),
  CAA: structured("CAA", [
    f("flags", int(1)),
    f("tag", {
      kind: "charstring",
      pattern: /^(issue|issuewild|iodef|issuemail|issuevmc)$/,
      hint: "must be one of issue, issuewild, iodef, issuemail, issuevmc",
      bare: true,
    }),
    f("value", { kind: "tail" }),
  ]),
  SVCB: svcb("SVCB"),
  HTTPS: svcb("HTTPS"),
  DS: structured("DS", [
    f("key_tag", int(2)),
    f("algorithm", int(1)),
    f("digest_type", int(1, { only: [1, 2, 4] })),
    f("digest", { kind: "hex", lengthBy: "digest_type", lengths: digestLengths }),
  ]),
  DNSKEY: structured("DNSKEY", [f("flags", int(2)), f("protocol", int(1, { only: [3] })), f("algorithm", int(1)), f("public_key", { kind: "base64" })]),
  NAPTR: structured("NAPTR", [
    f("order", int(2)),
    f("preference", int(2)),
    f("flags", { kind: "charstring", pattern: /^[A-Za-z0-9]*$/, hint: "may contain only letters and digits" }),
    f("service", { kind: "charstring" }),
    f("regex", { kind: "charstring" }),
    f("replacement", { kind: "host", allowRoot: true }),
  ]),
  SSHFP: structured("SSHFP", [
    f("algorithm", int(1, { only: [1, 2, 3, 4, 6] })),
    f("type", int(1, { only: [1, 2] })),
    f("fingerprint", { kind: "hex", lengthBy: "type", lengths: { 1: 20, 2: 32 } }),
  ]),
  TLSA: tlsa("TLSA"),
  SMIMEA: tlsa("SMIMEA"),
  CERT: structured("CERT", [f("type", int(2)), f("key_tag", int(2)), f("algorithm", int(1)), f("certificate", { kind: "base64" })]),
};

/** Types whose API answer carries `data`. */
export const hasData = (t: RecordType) => TYPE_NUMBERS[t] !== undefined;
/** Types whose API answer carries `priority`. */
export const hasPriority = (t: RecordType) => t === "MX" || t === "SRV" || t === "URI";
