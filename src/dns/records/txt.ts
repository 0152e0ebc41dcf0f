import { DnsErrors } from "../errors.js";

/**
 * TXT content is one or more character-strings in double quotes ("a" "b"). Content without any quote
 * is one string (its quoted form has quotes added); quotes that do not pair up, or text outside quotes, are refused.
 * Returns the strings (unescaped) and the canonical content.
 */
export function parseTxt(content: string): { strings: string[]; content: string } {
  const trimmed = content.trim();
  if (!trimmed.includes('"')) {
    const escaped = trimmed.replace(/\\/g, "\\\\");
    return { strings: [trimmed], content: `"${escaped}"` };
  }
  const strings: string[] = [];
  let i = 0;
  while (i < trimmed.length) {
    const c = trimmed[i];
    if (c === " " || c === "\t") {
      i++;
      continue;
    }
    if (c !== '"') throw inconsistent();
    let s = "";
    i++;
    let closed = false;
    while (i < trimmed.length) {
      const d = trimmed[i];
      // \DDD is a byte by its decimal value (RFC 1035 presentation form; export writes control characters so).
      // Only ASCII: a larger byte would be one half of a UTF-8 character, which the string cannot hold.
      const ddd = d === "\\" ? /^\d{3}/.exec(trimmed.slice(i + 1, i + 4)) : null;
      if (ddd && Number(ddd[0]) < 128) {
        s += String.fromCharCode(Number(ddd[0]));
        i += 4;
        continue;
      }
      if (d === "\\" && i + 1 < trimmed.length) {
        s += trimmed[i + 1];
        i += 2;
        continue;
      }
      if (d === '"') {
        closed = true;
        i++;
        break;
      }
      s += d;
      i++;
    }
    if (!closed) throw inconsistent();
    if (i < trimmed.length && trimmed[i] !== " " && trimmed[i] !== "\t") throw inconsistent();
    strings.push(s);
  }
  return { strings, content: trimmed };
}

const inconsistent = DnsErrors.txtQuotes;

/** The text without its quotes, for filters that match either form (certificate tools ask without quotes). */
export function unquotedTxt(content: string): string {
  try {
    return parseTxt(content).strings.join("");
  } catch {
    return content;
  }
}

/** The quoted form of TXT content as written (the content itself when it does not parse). */
export function quotedTxt(content: string): string {
  try {
    return parseTxt(content).content;
  } catch {
    return content;
  }
}

/** Character-strings on the wire hold at most 255 bytes; longer strings are split, as the hosted API does. */
export function txtWireStrings(strings: string[]): Buffer[] {
  const out: Buffer[] = [];
  for (const s of strings) {
    const b = Buffer.from(s, "utf8");
    if (b.length === 0) out.push(b);
    for (let i = 0; i < b.length; i += 255) out.push(b.subarray(i, i + 255));
  }
  return out;
}
