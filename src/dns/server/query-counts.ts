/**
 * Counts of the answers a process sent, by question name, type and response code, read from the answers' own bytes
 * (an answer repeats its question): what dnsAnalyticsAdaptiveGroups is made of. Kept free of the zone code, as the
 * UDP answering processes use it too (they send their counts to the main process, which knows the zones).
 */

/** One count: the question's name (lowercased, without the final dot), its type and the answer's rcode, as numbers. */
export type QueryCount = [name: string, qtype: number, rcode: number, n: number];

/** Distinct questions held before they are handed on early: memory stays bounded under a flood of random names. */
export const MAX_COUNTED_QUESTIONS = 10_000;

/** The question of an answer and its rcode, or undefined when the answer has no single readable question. */
export function answerKey(answer: Buffer): string | undefined {
  if (answer.length < 12 || answer[4] !== 0 || answer[5] !== 1) return undefined;
  let at = 12;
  const labels: string[] = [];
  for (;;) {
    if (at >= answer.length) return undefined;
    const len = answer[at];
    if (len === 0) break;
    // A question is never compressed; a pointer here is not an answer of ours.
    if (len > 63 || at + 1 + len > answer.length) return undefined;
    labels.push(answer.toString("latin1", at + 1, at + 1 + len).toLowerCase());
    at += 1 + len;
  }
  if (at + 3 > answer.length) return undefined;
  const qtype = answer.readUInt16BE(at + 1);
  const rcode = answer[3] & 0xf;
  return `${labels.join(".")}\u0000${qtype}\u0000${rcode}`;
}

/** Adds up answers by question; `full` is called when MAX_COUNTED_QUESTIONS distinct ones wait (to hand them on). */
export class QueryCounter {
  private counts = new Map<string, number>();

  constructor(private readonly full: () => void = () => {}) {}

  add(answer: Buffer, n = 1): void {
    const key = answerKey(answer);
    if (key === undefined) return;
    this.counts.set(key, (this.counts.get(key) ?? 0) + n);
    if (this.counts.size >= MAX_COUNTED_QUESTIONS) this.full();
  }

  get size(): number {
    return this.counts.size;
  }

  /** Everything counted since the last drain. */
  drain(): QueryCount[] {
    const out: QueryCount[] = [];
    for (const [key, n] of this.counts) {
      const [name, qtype, rcode] = key.split("\u0000");
      out.push([name, Number(qtype), Number(rcode), n]);
    }
    this.counts = new Map();
    return out;
  }
}
