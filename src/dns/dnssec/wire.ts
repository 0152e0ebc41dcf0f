import * as packet from "dns-packet";

/** The parts of dns-packet 5 its type definitions leave out: one name, and one resource record, in wire form. */
const codecs = packet as unknown as {
  name: { encode(name: string): Buffer; encodingLength(name: string): number };
  answer: { encode(rr: packet.Answer): Buffer };
};

/** A domain name in uncompressed wire form. */
export const nameWire = (name: string): Buffer => codecs.name.encode(name);
export const nameWireLength = (name: string): number => codecs.name.encodingLength(name);
/** One resource record in uncompressed wire form: owner, type, class, TTL, RDLENGTH, RDATA. */
export const rrWire = (rr: unknown): Buffer => codecs.answer.encode(rr as packet.Answer);
