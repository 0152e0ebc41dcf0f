import { Counter, type Registry } from "prom-client";
import { METRIC_PREFIX } from "../core/metrics/registry.js";
import { AnswerCounts, TYPE_CELLS } from "./server/wire-stats.js";
import type { AnsweringStats } from "./server/udp/messages.js";

/** Question types with a label of their own (a bounded set); any other is "other". */
const QTYPE_NAMES: Record<number, string> = {
  1: "A",
  2: "NS",
  5: "CNAME",
  6: "SOA",
  12: "PTR",
  13: "HINFO",
  15: "MX",
  16: "TXT",
  28: "AAAA",
  29: "LOC",
  33: "SRV",
  35: "NAPTR",
  37: "CERT",
  39: "DNAME",
  43: "DS",
  44: "SSHFP",
  46: "RRSIG",
  47: "NSEC",
  48: "DNSKEY",
  50: "NSEC3",
  51: "NSEC3PARAM",
  52: "TLSA",
  53: "SMIMEA",
  59: "CDS",
  60: "CDNSKEY",
  61: "OPENPGPKEY",
  64: "SVCB",
  65: "HTTPS",
  99: "SPF",
  251: "IXFR",
  252: "AXFR",
  255: "ANY",
  256: "URI",
  257: "CAA",
};
const RCODE_NAMES = ["NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED", "YXDOMAIN", "YXRRSET", "NXRRSET", "NOTAUTH", "NOTZONE"];
const qtypeName = (cell: number) => (cell < TYPE_CELLS - 1 ? QTYPE_NAMES[cell] : undefined) ?? "other";
const rcodeName = (rcode: number) => RCODE_NAMES[rcode] ?? `RCODE${rcode}`;

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
            if (cells[i] !== 0) this.inc({ transport, qtype: qtypeName(Math.floor(i / 16)), rcode: rcodeName(i % 16) }, cells[i]);
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
