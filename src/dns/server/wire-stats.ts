// Counting answered queries by question type and response code, from the wire bytes alone (no decoding): the main
// process, the UDP answering processes and the native thread (udp/native/udp-fast.cc, TypeCell) count alike, and the
// answering processes send their counts to the main process (udp/messages.ts, "stats"). Kept free of the zone code
// and of prom-client, so an answering process stays small.

/** Question types 0..TYPE_CELLS-2 each have a cell; the rest (and unreadable questions) share the last one. */
export const TYPE_CELLS = 260;
const OTHER_CELL = TYPE_CELLS - 1;
const HEADER = 12;

/** The counting cell of a query's question type: the type when below TYPE_CELLS - 1, else the last cell. */
export function typeCell(query: Uint8Array): number {
  let at = HEADER;
  for (;;) {
    if (at >= query.length) return OTHER_CELL;
    const len = query[at];
    if (len === 0) {
      at += 1;
      break;
    }
    // A compression pointer ends the name (two bytes); a question rarely has one.
    if ((len & 0xc0) === 0xc0) {
      at += 2;
      break;
    }
    if ((len & 0xc0) !== 0) return OTHER_CELL;
    at += 1 + len;
  }
  if (at + 2 > query.length) return OTHER_CELL;
  const type = (query[at] << 8) | query[at + 1];
  return type < OTHER_CELL ? type : OTHER_CELL;
}

/**
 * Answered queries by cell (type cell × 16 + response code, the low four bits of an answer's fourth byte): a flat
 * array of plain numbers, so counting one answer is an index and an increment, nothing a scrape would notice at
 * full load. Prometheus' counters are filled from it when scraped (src/dns/metrics.ts).
 */
export class AnswerCounts {
  readonly cells = new Float64Array(TYPE_CELLS * 16);

  /** Counts `answer` (at least a header long) to `query`. */
  count(query: Uint8Array, answer: Uint8Array): void {
    this.cells[typeCell(query) * 16 + (answer[3] & 0xf)]++;
  }

  /** Counts a FORMERR sent for a query that could not be read (its first question's type, when that can be). */
  countFormerr(query: Uint8Array): void {
    this.cells[typeCell(query) * 16 + 1]++;
  }

  /** Adds counts given as [cell, n, cell, n, ...]. */
  addPairs(pairs: readonly number[]): void {
    for (let i = 0; i + 1 < pairs.length; i += 2) {
      const cell = pairs[i];
      if (Number.isInteger(cell) && cell >= 0 && cell < this.cells.length && pairs[i + 1] > 0) this.cells[cell] += pairs[i + 1];
    }
  }
}

/**
 * What an answering process has counted since it last reported: `pairs()` gives the growth of each cell since the
 * previous call ([cell, n, ...]), from running totals (its own, or the native thread's, which only ever grow).
 */
export class CountDeltas {
  private readonly reported = new Float64Array(TYPE_CELLS * 16);

  /** The growth since the last call of each cell of `totals` ([cell, total, ...]). */
  fromTotals(totals: readonly number[]): number[] {
    const out: number[] = [];
    for (let i = 0; i + 1 < totals.length; i += 2) {
      const cell = totals[i];
      const grown = totals[i + 1] - this.reported[cell];
      if (grown > 0) {
        out.push(cell, grown);
        this.reported[cell] = totals[i + 1];
      }
    }
    return out;
  }
}

/** The non-zero cells of `counts` as [cell, total, ...]. */
export function totalsOf(counts: AnswerCounts): number[] {
  const out: number[] = [];
  const cells = counts.cells;
  for (let i = 0; i < cells.length; i++) if (cells[i] !== 0) out.push(i, cells[i]);
  return out;
}
