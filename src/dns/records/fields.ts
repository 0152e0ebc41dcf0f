import { parseHostname } from "../zones/names.js";
import { parseSvcParams, nameBytes, u16 } from "./svcb.js";

/**
 * The structured (`data`) record types are described field by field: each field knows how to check an
 * API value, how to read it from zone-file text, and how to write it on the wire. One description per
 * type then gives validation, content formatting, BIND import/export and wire encoding together.
 */
type FieldKind =
  | { kind: "int"; bytes: 1 | 2 | 4; min?: number; max?: number; only?: readonly number[] }
  | { kind: "host"; allowRoot?: boolean }
  | { kind: "charstring"; pattern?: RegExp; hint?: string; bare?: boolean } // length-prefixed on the wire, quoted in text unless bare
  | { kind: "tail" } // rest of the rdata as raw bytes (CAA value, URI target), quoted in text
  | { kind: "hex"; lengthBy?: string; lengths?: Record<number, number> }
  | { kind: "base64" }
  | { kind: "svcparams" };

export interface Field {
  name: string;
  spec: FieldKind;
}

/** A readable reason, thrown as Error and turned into a validation error by the caller. */
export class FieldError extends Error {}

export function checkField(f: Field, value: unknown, data: Record<string, unknown>): unknown {
  const s = f.spec;
  switch (s.kind) {
    case "int": {
      const n = typeof value === "string" && /^\d+$/.test(value) ? Number(value) : value;
      const max = s.max ?? 2 ** (8 * s.bytes) - 1;
      const min = s.min ?? 0;
      if (typeof n !== "number" || !Number.isInteger(n) || n < min || n > max) throw new FieldError(`${f.name} must be an integer between ${min} and ${max}`);
      if (s.only && !s.only.includes(n)) throw new FieldError(`${f.name} must be one of ${s.only.join(", ")}`);
      return n;
    }
    case "host": {
      const h = parseHostname(value, s.allowRoot);
      if (!h) throw new FieldError(`${f.name} must be a valid host name`);
      return h;
    }
    case "charstring": {
      if (typeof value !== "string") throw new FieldError(`${f.name} must be a string`);
      if (Buffer.byteLength(value) > 255) throw new FieldError(`${f.name} must be at most 255 bytes`);
      if (s.pattern && !s.pattern.test(value)) throw new FieldError(`${f.name} ${s.hint ?? "is invalid"}`);
      return value;
    }
    case "tail": {
      if (typeof value !== "string" || value.length === 0) throw new FieldError(`${f.name} must be a non-empty string`);
      return value;
    }
    case "hex": {
      if (typeof value !== "string" || !/^([0-9a-fA-F]{2})+$/.test(value.replace(/\s/g, ""))) throw new FieldError(`${f.name} must be hexadecimal`);
      const hex = value.replace(/\s/g, "").toLowerCase();
      // A digest's length follows from its type (SHA-1 20 bytes, SHA-256 32, SHA-384 48).
      const typeValue = s.lengthBy ? data[s.lengthBy] : undefined;
      const want = typeof typeValue === "number" ? s.lengths?.[typeValue] : undefined;
      if (want && hex.length / 2 !== want) throw new FieldError(`${f.name} must be ${want} bytes for this digest type`);
      return hex;
    }
    case "base64": {
      const v = typeof value === "string" ? value.replace(/\s/g, "") : "";
      if (!/^[A-Za-z0-9+/]+={0,2}$/.test(v) || v.length % 4 !== 0) throw new FieldError(`${f.name} must be base64`);
      return v;
    }
    case "svcparams": {
      const v = value === undefined || value === null ? "" : value;
      if (typeof v !== "string") throw new FieldError(`${f.name} must be a string of SvcParams`);
      try {
        parseSvcParams(v);
      } catch (e) {
        throw new FieldError(`${f.name}: ${(e as Error).message}`);
      }
      return v.trim();
    }
  }
}

const quote = (s: string) => `"${s.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;

/** Zone-file form of one field's value. */
export function fieldText(f: Field, v: unknown, zoneFile: boolean): string {
  switch (f.spec.kind) {
    case "host":
      return v === "." ? "." : zoneFile ? `${v}.` : `${v}`;
    case "charstring":
      return f.spec.bare ? String(v) : quote(String(v));
    case "tail":
      return quote(String(v));
    default:
      return String(v);
  }
}

export function fieldWire(f: Field, v: unknown): Buffer {
  const s = f.spec;
  switch (s.kind) {
    case "int": {
      const b = Buffer.alloc(s.bytes);
      b.writeUIntBE(v as number, 0, s.bytes);
      return b;
    }
    case "host":
      return nameBytes(v as string);
    case "charstring": {
      const b = Buffer.from(v as string);
      return Buffer.concat([Buffer.from([b.length]), b]);
    }
    case "tail":
      return Buffer.from(v as string);
    case "hex":
      return Buffer.from(v as string, "hex");
    case "base64":
      return Buffer.from(v as string, "base64");
    case "svcparams":
      return Buffer.concat(parseSvcParams(v as string).flatMap((p) => [u16(p.key), u16(p.value.length), p.value]));
  }
}

/** Splits presentation text into tokens; quoted strings keep spaces, `\x` escapes are resolved. */
export function tokenize(text: string): { value: string; start: number; end: number }[] {
  const out: { value: string; start: number; end: number }[] = [];
  let i = 0;
  while (i < text.length) {
    if (/\s/.test(text[i])) {
      i++;
      continue;
    }
    const start = i;
    let v = "";
    if (text[i] === '"') {
      i++;
      while (i < text.length && text[i] !== '"') {
        if (text[i] === "\\" && i + 1 < text.length) i++;
        v += text[i++];
      }
      if (text[i] !== '"') throw new FieldError("unbalanced quotation marks");
      i++;
    } else {
      while (i < text.length && !/\s/.test(text[i])) v += text[i++];
    }
    out.push({ value: v, start, end: i });
  }
  return out;
}

/** Reads the fields of a type from presentation text; a trailing svcparams field takes the rest of the line. */
export function fieldsFromText(fields: readonly Field[], text: string, origin?: string): Record<string, unknown> {
  const tokens = tokenize(text);
  const data: Record<string, unknown> = {};
  fields.forEach((f, i) => {
    if (f.spec.kind === "svcparams") {
      data[f.name] = tokens[i] ? text.slice(tokens[i].start).trim() : "";
      return;
    }
    const last = i === fields.length - 1;
    const t = tokens[i];
    if (!t) throw new FieldError(`missing ${f.name}`);
    // Base64 and hex may be split into several words in zone files.
    data[f.name] =
      last && (f.spec.kind === "base64" || f.spec.kind === "hex")
        ? tokens
            .slice(i)
            .map((x) => x.value)
            .join("")
        : t.value;
    // Zone files write names relative to $ORIGIN unless they end with a dot.
    if (origin !== undefined && f.spec.kind === "host") data[f.name] = absolute(t.value, origin);
    if (last && f.spec.kind !== "base64" && f.spec.kind !== "hex" && tokens.length > fields.length)
      throw new FieldError(`unexpected "${tokens[fields.length].value}"`);
  });
  return data;
}

export const int = (bytes: 1 | 2 | 4, extra: Omit<Extract<FieldKind, { kind: "int" }>, "kind" | "bytes"> = {}): FieldKind => ({ kind: "int", bytes, ...extra });

/** A zone-file name made absolute against the origin ("@" is the origin itself). */
export function absolute(name: string, origin: string): string {
  if (name === "@") return origin;
  if (name === ".") return ".";
  return name.endsWith(".") ? name.slice(0, -1) : `${name}.${origin}`;
}
