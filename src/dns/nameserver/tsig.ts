import { createHmac, timingSafeEqual } from "node:crypto";
import { decodeName, encodeName } from "./wire-codecs.js";

/**
 * TSIG (RFC 8945) at the wire level. dns-packet knows the TSIG type number (250) but not its data (it hands the
 * RDATA over as opaque bytes), and the MAC covers the exact bytes of the message as sent, with the original id and
 * an additional count that leaves the TSIG out. So signing appends a TSIG record to encoded bytes, and verifying
 * finds the TSIG record at the end of received bytes and takes the message apart at that offset.
 */

/** TSIG algorithm names (RFC 8945 §6) and the HMAC hash each names. */
const HASHES = new Map<string, string>([
  ["hmac-md5.sig-alg.reg.int", "md5"],
  ["hmac-sha1", "sha1"],
  ["hmac-sha224", "sha224"],
  ["hmac-sha256", "sha256"],
  ["hmac-sha384", "sha384"],
  ["hmac-sha512", "sha512"],
]);
/** The algorithms the API takes (the three: sha256, sha512, and md5 for old peers). */
export const TSIG_ALGORITHMS = ["hmac-sha256", "hmac-sha512", "hmac-md5.sig-alg.reg.int"] as const;

export const TsigError = { BADSIG: 16, BADKEY: 17, BADTIME: 18 } as const;
const TSIG_TYPE = 250;
const CLASS_ANY = 255;
const NOTAUTH = 9;
/** Seconds of clock difference a signature allows (RFC 8945 recommends 300). */
export const FUDGE = 300;

export interface TsigKey {
  /** Lowercase, no trailing dot. */
  name: string;
  /** One of HASHES' names, lowercase, no trailing dot. */
  algorithm: string;
  secret: Buffer;
}

/** A TSIG record read from the end of a message. */
export interface TsigRecord {
  keyName: string;
  algorithm: string;
  timeSigned: number;
  fudge: number;
  mac: Buffer;
  originalId: number;
  error: number;
  otherData: Buffer;
  /** Where the TSIG record starts in the message. */
  offset: number;
}

/** The canonical spelling of an algorithm name (lowercase, no final dot), or undefined when it is not one we know. */
export function algorithmName(given: string): string | undefined {
  const n = given.toLowerCase().replace(/\.$/, "");
  return HASHES.has(n) ? n : undefined;
}

const canonicalName = (n: string) => n.toLowerCase().replace(/\.$/, "");
const wireName = (n: string) => encodeName(canonicalName(n));

/** Skips a (possibly compressed) name; the offset just after it. Throws past the end. */
function skipName(buf: Buffer, offset: number): number {
  for (;;) {
    if (offset >= buf.length) throw new RangeError("name runs past the end");
    const len = buf[offset];
    if ((len & 0xc0) === 0xc0) return offset + 2;
    if (len === 0) return offset + 1;
    offset += len + 1;
  }
}

/**
 * The TSIG record of a message: undefined when the last additional record is not one (an unsigned message).
 * Throws on bytes that cannot be read (the caller answers FORMERR).
 */
export function readTsig(msg: Buffer): TsigRecord | undefined {
  if (msg.length < 12) throw new RangeError("short message");
  const qd = msg.readUInt16BE(4);
  const rrs = msg.readUInt16BE(6) + msg.readUInt16BE(8) + msg.readUInt16BE(10);
  if (msg.readUInt16BE(10) === 0) return undefined;
  let o = 12;
  for (let i = 0; i < qd; i++) o = skipName(msg, o) + 4;
  let last = -1;
  let lastType = 0;
  for (let i = 0; i < rrs; i++) {
    last = o;
    o = skipName(msg, o);
    if (o + 10 > msg.length) throw new RangeError("record runs past the end");
    lastType = msg.readUInt16BE(o);
    o += 10 + msg.readUInt16BE(o + 8);
    if (o > msg.length) throw new RangeError("record data runs past the end");
  }
  if (lastType !== TSIG_TYPE) return undefined;
  const keyName = canonicalName(decodeName(msg, last));
  let d = skipName(msg, last) + 10;
  const algorithm = canonicalName(decodeName(msg, d));
  d = skipName(msg, d);
  const timeSigned = msg.readUInt16BE(d) * 2 ** 32 + msg.readUInt32BE(d + 2);
  const fudge = msg.readUInt16BE(d + 6);
  const macSize = msg.readUInt16BE(d + 8);
  const mac = msg.subarray(d + 10, d + 10 + macSize);
  d += 10 + macSize;
  const originalId = msg.readUInt16BE(d);
  const error = msg.readUInt16BE(d + 2);
  const otherLen = msg.readUInt16BE(d + 4);
  const otherData = msg.subarray(d + 6, d + 6 + otherLen);
  if (d + 6 + otherLen !== o) throw new RangeError("TSIG data is not the size its record says");
  return { keyName, algorithm, timeSigned, fudge, mac, originalId, error, otherData, offset: last };
}

/** The message as it was before `tsig` was added: original id, one additional fewer, the TSIG record cut off. */
function unsignedPart(msg: Buffer, tsig: TsigRecord): Buffer {
  const out = Buffer.from(msg.subarray(0, tsig.offset));
  out.writeUInt16BE(tsig.originalId, 0);
  out.writeUInt16BE(msg.readUInt16BE(10) - 1, 10);
  return out;
}

const u16 = (n: number) => {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(n);
  return b;
};
const time48 = (t: number) => {
  const b = Buffer.alloc(6);
  b.writeUInt16BE(Math.floor(t / 2 ** 32));
  b.writeUInt32BE(t % 2 ** 32, 2);
  return b;
};
const lengthPrefixed = (mac: Buffer) => Buffer.concat([u16(mac.length), mac]);

interface Fields {
  timeSigned: number;
  fudge: number;
  error: number;
  otherData: Buffer;
}

/** The TSIG variables the MAC covers (RFC 8945 §4.3.3); only the timers for the later messages of a stream. */
function variables(key: TsigKey, f: Fields, timersOnly: boolean): Buffer {
  const timers = Buffer.concat([time48(f.timeSigned), u16(f.fudge)]);
  if (timersOnly) return timers;
  const ttlAndClass = Buffer.from([0, CLASS_ANY, 0, 0, 0, 0]);
  return Buffer.concat([wireName(key.name), ttlAndClass, wireName(key.algorithm), timers, u16(f.error), u16(f.otherData.length), f.otherData]);
}

function hmac(key: TsigKey, parts: Buffer[]): Buffer {
  const hash = HASHES.get(key.algorithm);
  if (!hash) throw new Error(`unknown TSIG algorithm ${key.algorithm}`);
  const h = createHmac(hash, key.secret);
  for (const p of parts) h.update(p);
  return h.digest();
}

/** Appends a TSIG record carrying `mac` (possibly empty) to an unsigned message. */
function appendTsig(msg: Buffer, key: { name: string; algorithm: string }, f: Fields, mac: Buffer): Buffer {
  const rdata = Buffer.concat([
    wireName(key.algorithm),
    time48(f.timeSigned),
    u16(f.fudge),
    u16(mac.length),
    mac,
    msg.subarray(0, 2),
    u16(f.error),
    u16(f.otherData.length),
    f.otherData,
  ]);
  const head = Buffer.alloc(10);
  head.writeUInt16BE(TSIG_TYPE, 0);
  head.writeUInt16BE(CLASS_ANY, 2);
  head.writeUInt32BE(0, 4);
  head.writeUInt16BE(rdata.length, 8);
  const out = Buffer.concat([msg, wireName(key.name), head, rdata]);
  out.writeUInt16BE(msg.readUInt16BE(10) + 1, 10);
  return out;
}

export const nowSeconds = () => Math.floor(Date.now() / 1000);

/** Signs one message (a request, or a lone response to `requestMac`); returns it with its TSIG, and the MAC. */
export function sign(
  msg: Buffer,
  key: TsigKey,
  opts: { requestMac?: Buffer; time?: number; error?: number; otherData?: Buffer } = {},
): { message: Buffer; mac: Buffer } {
  const f: Fields = { timeSigned: opts.time ?? nowSeconds(), fudge: FUDGE, error: opts.error ?? 0, otherData: opts.otherData ?? Buffer.alloc(0) };
  const parts = [msg, variables(key, f, false)];
  if (opts.requestMac) parts.unshift(lengthPrefixed(opts.requestMac));
  const mac = hmac(key, parts);
  return { message: appendTsig(msg, key, f, mac), mac };
}

/**
 * Signs the messages of one answer that spans several (AXFR, IXFR): the first with the request's MAC, each later
 * one with the MAC before it and the messages since (RFC 8945 §5.3.1). Every message is signed here (the RFC asks
 * for at least every 100th), so a secondary never holds unsigned data it must take on trust for long.
 */
export class StreamSigner {
  private priorMac: Buffer;
  private first = true;

  constructor(
    private readonly key: TsigKey,
    requestMac: Buffer,
  ) {
    this.priorMac = requestMac;
  }

  sign(msg: Buffer): Buffer {
    const f: Fields = { timeSigned: nowSeconds(), fudge: FUDGE, error: 0, otherData: Buffer.alloc(0) };
    const mac = hmac(this.key, [lengthPrefixed(this.priorMac), msg, variables(this.key, f, !this.first)]);
    this.first = false;
    this.priorMac = mac;
    return appendTsig(msg, this.key, f, mac);
  }
}

export type Verified =
  | { status: "unsigned" }
  | { status: "ok"; key: TsigKey; tsig: TsigRecord }
  /** Refused: `reply(query)` builds the NOTAUTH answer with a TSIG record telling why. */
  | { status: "refused"; error: number; tsig: TsigRecord; key?: TsigKey };

/**
 * Checks a signed request (RFC 8945 §5.2) with the keys `keyNamed` finds: the key (BADKEY), then the MAC (BADSIG),
 * then the time (BADTIME). A MAC shorter than the algorithm's is refused as BADSIG (truncation is not accepted).
 */
export function verifyRequest(msg: Buffer, keyNamed: (name: string) => TsigKey | undefined, now = nowSeconds()): Verified {
  const tsig = readTsig(msg);
  if (!tsig) return { status: "unsigned" };
  const key = keyNamed(tsig.keyName);
  if (!key || key.algorithm !== tsig.algorithm) return { status: "refused", error: TsigError.BADKEY, tsig };
  const expected = hmac(key, [unsignedPart(msg, tsig), variables(key, tsig, false)]);
  if (tsig.mac.length !== expected.length || !timingSafeEqual(tsig.mac, expected)) return { status: "refused", error: TsigError.BADSIG, tsig };
  if (Math.abs(now - tsig.timeSigned) > tsig.fudge) return { status: "refused", error: TsigError.BADTIME, tsig, key };
  return { status: "ok", key, tsig };
}

/**
 * Checks a signed response to a request we signed with `requestMac` (a lone message: the answer to a NOTIFY or
 * a SOA query). Returns the response's MAC, or the reason it is not acceptable.
 */
export function verifyResponse(msg: Buffer, key: TsigKey, requestMac: Buffer, now = nowSeconds()): { ok: true } | { ok: false; why: string } {
  let tsig: TsigRecord | undefined;
  try {
    tsig = readTsig(msg);
  } catch {
    return { ok: false, why: "unreadable" };
  }
  if (!tsig) return { ok: false, why: "unsigned" };
  if (tsig.keyName !== key.name || tsig.algorithm !== key.algorithm) return { ok: false, why: "signed with another key" };
  if (tsig.error) return { ok: false, why: `TSIG error ${tsig.error}` };
  const expected = hmac(key, [lengthPrefixed(requestMac), unsignedPart(msg, tsig), variables(key, tsig, false)]);
  if (tsig.mac.length !== expected.length || !timingSafeEqual(tsig.mac, expected)) return { ok: false, why: "bad signature" };
  if (Math.abs(now - tsig.timeSigned) > tsig.fudge) return { ok: false, why: "signed at another time" };
  return { ok: true };
}

/**
 * The NOTAUTH answer to a refused signed request: for BADKEY and BADSIG an unsigned TSIG record (empty MAC: we
 * cannot or must not sign with that key); for BADTIME one signed with the key, carrying our time (RFC 8945 §5.2.3).
 */
export function refusalReply(query: Buffer, refusal: Extract<Verified, { status: "refused" }>): Buffer {
  const { tsig } = refusal;
  const flags = 0x8000 | (query.readUInt16BE(2) & 0x7900) | NOTAUTH;
  const question = firstQuestion(query);
  const header = Buffer.alloc(12);
  header.writeUInt16BE(query.readUInt16BE(0), 0);
  header.writeUInt16BE(flags, 2);
  header.writeUInt16BE(question ? 1 : 0, 4);
  const msg = Buffer.concat([header, question ?? Buffer.alloc(0)]);
  const f: Fields = { timeSigned: tsig.timeSigned, fudge: tsig.fudge, error: refusal.error, otherData: Buffer.alloc(0) };
  if (refusal.error === TsigError.BADTIME && refusal.key) {
    f.otherData = time48(nowSeconds());
    const mac = hmac(refusal.key, [lengthPrefixed(tsig.mac), msg, variables(refusal.key, f, false)]);
    return appendTsig(msg, refusal.key, f, mac);
  }
  return appendTsig(msg, { name: tsig.keyName, algorithm: tsig.algorithm }, f, Buffer.alloc(0));
}

/** The bytes of a query's question when it has exactly one. */
function firstQuestion(msg: Buffer): Buffer | undefined {
  if (msg.readUInt16BE(4) !== 1) return undefined;
  const end = skipName(msg, 12) + 4;
  return end <= msg.length ? msg.subarray(12, end) : undefined;
}

/** Unsigned messages a signed transfer may have in a row (RFC 8945 §5.3.1: at least every 100th is signed). */
const MAX_UNSIGNED_RUN = 99;

/**
 * Checks the messages of a signed answer that spans several (an AXFR or IXFR we asked for with `requestMac`),
 * in order: the first must be signed (its MAC over the request's MAC, the message and every TSIG variable), each
 * later signed one covers the MAC before it, the unsigned messages since and itself with the timers only. At most
 * 99 unsigned messages in a row; the caller checks `complete()` on the last one (it must be signed too).
 */
export class StreamVerifier {
  private priorMac: Buffer;
  private first = true;
  private unsigned: Buffer[] = [];

  constructor(
    private readonly key: TsigKey,
    requestMac: Buffer,
    private readonly now = nowSeconds,
  ) {
    this.priorMac = requestMac;
  }

  /** Throws (with why) when a message is not acceptable. */
  verify(msg: Buffer): void {
    const tsig = readTsig(msg);
    if (!tsig) {
      if (this.first) throw new Error("the answer is not signed");
      if (this.unsigned.length >= MAX_UNSIGNED_RUN) throw new Error(`more than ${MAX_UNSIGNED_RUN} unsigned messages in a row`);
      this.unsigned.push(msg);
      return;
    }
    if (tsig.keyName !== this.key.name || tsig.algorithm !== this.key.algorithm) throw new Error("signed with another key");
    if (tsig.error) throw new Error(`TSIG error ${tsig.error}`);
    const expected = hmac(this.key, [lengthPrefixed(this.priorMac), ...this.unsigned, unsignedPart(msg, tsig), variables(this.key, tsig, !this.first)]);
    if (tsig.mac.length !== expected.length || !timingSafeEqual(tsig.mac, expected)) throw new Error("bad signature");
    if (Math.abs(this.now() - tsig.timeSigned) > tsig.fudge) throw new Error("signed at another time");
    this.first = false;
    this.unsigned = [];
    this.priorMac = tsig.mac;
  }

  /** Whether everything verified so far ends with a signed message. */
  complete(): boolean {
    return !this.first && this.unsigned.length === 0;
  }
}
