import * as packet from "dns-packet";

/**
 * The codecs dns-packet exports at run time for names, questions and records, which its type declarations leave
 * out. Transfers and TSIG work on wire bytes record by record, so they use these directly.
 */
interface Codecs {
  name: { encode(n: string): Buffer; decode(buf: Buffer, offset: number): string };
  answer: { encode(a: packet.Answer): Buffer; decode(buf: Buffer, offset?: number): packet.Answer };
  question: { encode(q: packet.Question, buf: Buffer, offset: number): unknown; encodingLength(q: packet.Question): number };
}
const codecs = packet as unknown as Codecs;

export const encodeName = (n: string): Buffer => codecs.name.encode(n);
/** A (possibly compressed) name read at `offset` of a whole message, without its final dot. */
export const decodeName = (buf: Buffer, offset: number): string => codecs.name.decode(buf, offset);
export const encodeRr = (a: packet.Answer): Buffer => codecs.answer.encode(a);
export const decodeRr = (b: Buffer): packet.Answer => codecs.answer.decode(b);
export function encodeQuestion(q: packet.Question): Buffer {
  const buf = Buffer.alloc(codecs.question.encodingLength(q));
  codecs.question.encode(q, buf, 0);
  return buf;
}
