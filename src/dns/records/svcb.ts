import { isIP } from "node:net";

/** SvcParam keys of RFC 9460 by name; others are written keyNNNNN. */
const KEYS = new Map<string, number>([
  ["mandatory", 0],
  ["alpn", 1],
  ["no-default-alpn", 2],
  ["port", 3],
  ["ipv4hint", 4],
  ["ech", 5],
  ["ipv6hint", 6],
]);

export interface SvcParam {
  key: number;
  value: Buffer;
}

/**
 * Parses SvcParams presentation text (`alpn="h3,h2" ipv4hint=192.0.2.1 port=8443`) into wire values.
 * Throws an Error with a readable message on anything malformed.
 */
export function parseSvcParams(text: string): SvcParam[] {
  const params: SvcParam[] = [];
  const re = /\s*([a-z0-9-]+)(?:=("(?:[^"\\]|\\.)*"|[^\s"]*))?/giy;
  const src = text.trim();
  let m: RegExpExecArray | null;
  re.lastIndex = 0;
  while (re.lastIndex < src.length && (m = re.exec(src))) {
    const name = m[1].toLowerCase();
    const raw = m[2] === undefined ? undefined : m[2].startsWith('"') ? m[2].slice(1, -1).replace(/\\(.)/g, "$1") : m[2];
    const key = KEYS.get(name) ?? (/^key\d{1,5}$/.test(name) ? Number(name.slice(3)) : NaN);
    if (!Number.isInteger(key) || key > 65535) throw new Error(`unknown SvcParam key "${name}"`);
    if (params.some((p) => p.key === key)) throw new Error(`SvcParam "${name}" appears twice`);
    params.push({ key, value: encodeValue(key, name, raw) });
    if (re.lastIndex < src.length && !/\s/.test(src[re.lastIndex])) throw new Error(`unexpected text after "${name}"`);
  }
  if (re.lastIndex < src.length && src.slice(re.lastIndex).trim() !== "") throw new Error(`cannot read "${src.slice(re.lastIndex)}"`);
  return params.sort((a, b) => a.key - b.key);
}

function encodeValue(key: number, name: string, raw: string | undefined): Buffer {
  const need = () => {
    if (raw === undefined || raw === "") throw new Error(`SvcParam "${name}" needs a value`);
    return raw;
  };
  switch (key) {
    case 0: {
      const keys = need()
        .split(",")
        .map((k) => KEYS.get(k) ?? (/^key\d+$/.test(k) ? Number(k.slice(3)) : NaN));
      if (keys.some((k) => !Number.isInteger(k) || k > 65535)) throw new Error(`mandatory lists an unknown key`);
      const b = Buffer.alloc(keys.length * 2);
      keys.sort((a, b2) => a - b2).forEach((k, i) => b.writeUInt16BE(k, i * 2));
      return b;
    }
    case 1: {
      const ids = need()
        .split(",")
        .map((s) => Buffer.from(s));
      if (ids.some((b) => b.length === 0 || b.length > 255)) throw new Error(`alpn ids must be 1-255 bytes`);
      return Buffer.concat(ids.flatMap((b) => [Buffer.from([b.length]), b]));
    }
    case 2:
      if (raw !== undefined && raw !== "") throw new Error(`no-default-alpn takes no value`);
      return Buffer.alloc(0);
    case 3: {
      const p = Number(need());
      if (!Number.isInteger(p) || p < 0 || p > 65535) throw new Error(`port must be 0-65535`);
      const b = Buffer.alloc(2);
      b.writeUInt16BE(p);
      return b;
    }
    case 4:
    case 6: {
      const fam = key === 4 ? 4 : 6;
      const addrs = need().split(",");
      if (addrs.some((a) => isIP(a) !== fam)) throw new Error(`${name} must list IPv${fam} addresses`);
      return Buffer.concat(addrs.map((a) => (fam === 4 ? Buffer.from(a.split(".").map(Number)) : ipv6Bytes(a))));
    }
    case 5: {
      const b = Buffer.from(need(), "base64");
      if (b.length === 0) throw new Error(`ech must be base64`);
      return b;
    }
    default:
      return Buffer.from(raw ?? "", "utf8");
  }
}

export function ipv6Bytes(addr: string): Buffer {
  const [head, tail] = addr.includes("::") ? addr.split("::") : [addr, undefined];
  const parse = (s: string | undefined) => (s ? s.split(":") : []);
  let h = parse(head);
  let t = parse(tail);
  // An embedded IPv4 tail (::ffff:1.2.3.4) is two groups.
  const v4 = (arr: string[]) => {
    const last = arr[arr.length - 1];
    if (last && last.includes(".")) {
      const o = last.split(".").map(Number);
      arr.splice(arr.length - 1, 1, ((o[0] << 8) | o[1]).toString(16), ((o[2] << 8) | o[3]).toString(16));
    }
    return arr;
  };
  if (tail === undefined) h = v4(h);
  else t = v4(t);
  const groups = tail === undefined ? h : [...h, ...Array(8 - h.length - t.length).fill("0"), ...t];
  const b = Buffer.alloc(16);
  groups.forEach((g, i) => b.writeUInt16BE(parseInt(g, 16), i * 2));
  return b;
}

/** SVCB/HTTPS rdata: priority, target (uncompressed), params. */
export function svcbRdata(priority: number, target: string, params: SvcParam[]): Buffer {
  const parts = [u16(priority), nameBytes(target)];
  for (const p of params) parts.push(u16(p.key), u16(p.value.length), p.value);
  return Buffer.concat(parts);
}

export function u16(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(n);
  return b;
}

/** An uncompressed wire name ("." is the root). */
export function nameBytes(name: string): Buffer {
  const labels = name === "." || name === "" ? [] : name.replace(/\.$/, "").split(".");
  return Buffer.concat([...labels.flatMap((l) => [Buffer.from([Buffer.byteLength(l)]), Buffer.from(l)]), Buffer.from([0])]);
}
