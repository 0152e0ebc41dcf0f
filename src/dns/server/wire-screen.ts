// A look at a DNS message's bytes before it is decoded, so that garbage costs less than a real question.
//
// Why: dns-packet's decoder allocates arrays as long as the header's four counts before it reads anything else
// (up to 4 x 65,535 slots), about 10 ms per random datagram, and then throws (an exception with its stack). A
// flood of random datagrams kept the main process busy for minutes while real questions waited behind it.
// screenQuery() walks the header and question section in a few hundred nanoseconds and says what dns-packet
// would end in anyway: a message it cannot decode gets a header-only FORMERR right where it arrived (in the
// answering process, or in the native thread: udp/native/udp-fast.cc holds the same rules as ScreenQuery), a
// response is dropped, and only the rest is decoded. Every message it marks "formerr" is one dns-packet
// would refuse (or, a standard query without exactly one question, that respond() answers FORMERR).

const HEADER = 12;
const QR = 0x8000;
const OPCODE_MASK = 0xf << 11;
const RD = 1 << 8;
const CD = 1 << 4;
const FORMERR = 1;
/** Fewest bytes dns-packet reads for a resource record after its name: type, class and TTL (OPT: size, rcode, version, flags). */
const RECORD_FIXED = 8;
/** Fewest bytes a resource record takes: a one-byte name (the root) and the fixed part. */
const MIN_RECORD = 1 + RECORD_FIXED;
/** dns-packet refuses names longer than this (counting a length byte per label). */
const MAX_NAME = 254;

/** "answer": decode and answer it; "formerr": reply with formerrReply(); "drop": send nothing (not a query, or too short for a header). */
type Screen = "answer" | "formerr" | "drop";

export function screenQuery(msg: Uint8Array): Screen {
  if (msg.length < HEADER) return "drop";
  const flags = (msg[2] << 8) | msg[3];
  if (flags & QR) return "drop";
  const questions = (msg[4] << 8) | msg[5];
  const records = ((msg[6] << 8) | msg[7]) + ((msg[8] << 8) | msg[9]) + ((msg[10] << 8) | msg[11]);
  if ((flags & OPCODE_MASK) === 0 && questions !== 1) return "formerr";
  let offset = HEADER;
  for (let i = 0; i < questions; i++) {
    offset = nameEnd(msg, offset);
    if (offset < 0 || offset + 4 > msg.length) return "formerr";
    offset += 4;
  }
  if (records === 0) return "answer";
  // Only the first record's start is known without decoding its data; each later one takes MIN_RECORD bytes at least.
  const end = nameEnd(msg, offset);
  if (end < 0 || end + RECORD_FIXED + (records - 1) * MIN_RECORD > msg.length) return "formerr";
  return "answer";
}

/** The FORMERR sent for a message we cannot read: its id, QR, its opcode, RD and CD, and nothing else. */
export function formerrReply(msg: Uint8Array): Buffer {
  const out = Buffer.alloc(HEADER);
  out[0] = msg[0];
  out[1] = msg[1];
  out.writeUInt16BE(QR | (((msg[2] << 8) | msg[3]) & (OPCODE_MASK | RD | CD)) | FORMERR, 2);
  return out;
}

/**
 * Where the name starting at `offset` ends (the next field), or -1 where dns-packet's name decoder throws:
 * past the end, a label past the end, a name over 254 bytes, a label type other than 00 or 11, a compression
 * pointer that does not point before the name it is in (so pointers cannot loop).
 */
function nameEnd(msg: Uint8Array, offset: number): number {
  let at = offset;
  let lowest = offset;
  let length = 0;
  let end = -1;
  for (;;) {
    if (at >= msg.length) return -1;
    const len = msg[at++];
    if (len === 0) break;
    if ((len & 0xc0) === 0) {
      if (at + len > msg.length) return -1;
      length += len + 1;
      if (length > MAX_NAME) return -1;
      at += len;
    } else if ((len & 0xc0) === 0xc0) {
      if (at >= msg.length) return -1;
      const target = ((len & 0x3f) << 8) | msg[at];
      if (target >= lowest) return -1;
      if (end < 0) end = at + 1;
      at = lowest = target;
    } else return -1;
  }
  return end < 0 ? at : end;
}
