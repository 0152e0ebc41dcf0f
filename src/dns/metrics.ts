import { Counter, type Registry } from "prom-client";
import { METRIC_PREFIX } from "../core/metrics/registry.js";
import { AnswerCounts, TYPE_CELLS } from "./server/wire-stats.js";
import type { AnsweringStats } from "./server/udp/messages.js";
import { QUESTION_TYPE_NAMES, responseCodeName } from "./wire-names.js";

/** A question type's label: its name, or "other" for a type without one (labels stay a bounded set). */
const qtypeName = (cell: number) => (cell < TYPE_CELLS - 1 ? QUESTION_TYPE_NAMES[cell] : undefined) ?? "other";

export type DnsTransport = "udp" | "tcp";

/**
 * The authoritative server's metrics. Counting stays in plain arrays on the answering path (wire-stats.ts) and is
 * copied into Prometheus' counters only when scraped; the UDP answering processes (--dns-workers) and their native
 * threads count for themselves and report to this process every few seconds over their IPC channel (`report`).
 */
export class DnsMetrics {
  readonly udp = new AnswerCounts();
  readonly tcp = new AnswerCounts();
  /** Lookups in the answer caches: this process's (UDP without answering processes, TCP, and their misses) and theirs. */
  readonly cache = { mainHits: 0, mainMisses: 0, answeringHits: 0, answeringMisses: 0 };

  constructor(registry: Registry) {
    const counts = { udp: this.udp, tcp: this.tcp };
    new Counter({
      name: `${METRIC_PREFIX}dns_queries_total`,
      help: 'Queries the authoritative server answered, by transport, question type (known types; others "other") and response code',
      labelNames: ["transport", "qtype", "rcode"],
      registers: [registry],
      collect() {
        this.reset();
        for (const [transport, c] of Object.entries(counts)) {
          const cells = c.cells;
          for (let i = 0; i < cells.length; i++)
            if (cells[i] !== 0) this.inc({ transport, qtype: qtypeName(Math.floor(i / 16)), rcode: responseCodeName(i % 16) }, cells[i]);
        }
      },
    });
    const cache = this.cache;
    new Counter({
      name: `${METRIC_PREFIX}dns_answer_cache_lookups_total`,
      help: 'Lookups in the answer caches of wire answers, by result (hit, miss) and process ("main": the platform\'s; "answering": the UDP answering processes\', their native threads included)',
      labelNames: ["result", "process"],
      registers: [registry],
      collect() {
        this.reset();
        this.inc({ result: "hit", process: "main" }, cache.mainHits);
        this.inc({ result: "miss", process: "main" }, cache.mainMisses);
        this.inc({ result: "hit", process: "answering" }, cache.answeringHits);
        this.inc({ result: "miss", process: "answering" }, cache.answeringMisses);
      },
    });
  }

  /** An answering process's report (udp/pool.ts). */
  report(stats: AnsweringStats): void {
    this.udp.addPairs(stats.answered);
    if (stats.hits > 0) this.cache.answeringHits += stats.hits;
    if (stats.misses > 0) this.cache.answeringMisses += stats.misses;
  }
}
