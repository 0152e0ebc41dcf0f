import { DnsErrors } from "../errors.js";
import { RECORD_TYPES, type DnsRecord } from "../model.js";
import { quotedTxt, unquotedTxt } from "./txt.js";

type Query = Record<string, unknown>;
type Test = (r: DnsRecord) => boolean;

const OPS = ["exact", "contains", "startswith", "endswith"] as const;
const str = (v: unknown) => (Array.isArray(v) ? String(v[v.length - 1]) : String(v));
const all = (v: unknown): string[] => (Array.isArray(v) ? v.map(String) : [String(v)]);

function matcher(op: (typeof OPS)[number], want: string): (value: string) => boolean {
  const w = want.toLowerCase();
  switch (op) {
    case "exact":
      return (v) => v.toLowerCase() === w;
    case "contains":
      return (v) => v.toLowerCase().includes(w);
    case "startswith":
      return (v) => v.toLowerCase().startsWith(w);
    case "endswith":
      return (v) => v.toLowerCase().endsWith(w);
  }
}

/** The forms of `field`, `field.exact`, `field.contains`, ... present in the query, as tests over values. */
function fieldTests(q: Query, field: string, values: (r: DnsRecord) => string[], normalize: (s: string) => string = (s) => s): Test[] {
  const tests: Test[] = [];
  const add = (op: (typeof OPS)[number], raw: unknown) => {
    for (const want of all(raw)) {
      const m = matcher(op, normalize(want));
      tests.push((r) => values(r).some(m));
    }
  };
  if (q[field] !== undefined && q[field] !== "") add("exact", q[field]);
  for (const op of OPS) if (q[`${field}.${op}`] !== undefined) add(op, q[`${field}.${op}`]);
  return tests;
}

/** TXT content matches with or without its quotes, however it was written: certificate tools look records up either way. */
const contentValues = (r: DnsRecord) => (r.type === "TXT" ? [r.content, quotedTxt(r.content), unquotedTxt(r.content)] : [r.content]);
const tagName = (t: string) => t.split(":")[0];

/**
 * Filters and orders a zone's records for GET dns_records. `match` combines the non-tag filters
 * (all = AND, any = OR), `tag_match` the tag filters; the two groups are then AND-ed.
 */
export function filterRecords(records: Iterable<DnsRecord>, q: Query): DnsRecord[] {
  const tests: Test[] = [];
  if (q.type !== undefined && q.type !== "") {
    const types = all(q.type)
      .flatMap((t) => t.split(","))
      .map((t) => t.trim().toUpperCase());
    for (const t of types) if (!(RECORD_TYPES as readonly string[]).includes(t)) throw DnsErrors.typeFilter(t);
    tests.push((r) => types.includes(r.type));
  }
  tests.push(
    ...fieldTests(
      q,
      "name",
      (r) => [r.name],
      (s) => s.replace(/\.$/, ""),
    ),
  );
  tests.push(...fieldTests(q, "content", contentValues));
  tests.push(...fieldTests(q, "comment", (r) => (r.comment === null ? [] : [r.comment])));
  if (q["comment.present"] !== undefined) tests.push((r) => r.comment !== null);
  if (q["comment.absent"] !== undefined) tests.push((r) => r.comment === null);
  if (q.proxied !== undefined && q.proxied !== "") {
    const p = str(q.proxied);
    if (p !== "true" && p !== "false") throw DnsErrors.proxiedFilter();
    tests.push((r) => r.proxied === (p === "true"));
  }
  if (q.search !== undefined && q.search !== "") {
    const s = str(q.search).toLowerCase();
    tests.push((r) => r.name.includes(s) || contentValues(r).some((c) => c.toLowerCase().includes(s)) || (r.comment ?? "").toLowerCase().includes(s));
  }
  const tagTests = fieldTests(q, "tag", (r) => r.tags);
  for (const n of q["tag.present"] !== undefined ? all(q["tag.present"]) : [])
    tagTests.push((r) => r.tags.some((t) => tagName(t).toLowerCase() === n.toLowerCase()));
  for (const n of q["tag.absent"] !== undefined ? all(q["tag.absent"]) : [])
    tagTests.push((r) => !r.tags.some((t) => tagName(t).toLowerCase() === n.toLowerCase()));

  const mode = (key: string) => {
    const v = q[key] === undefined ? "all" : str(q[key]);
    if (v !== "all" && v !== "any") throw DnsErrors.matchMode(key);
    return v;
  };
  const match = mode("match");
  // cloudflare-go v0 spells it tag-match.
  const tagMatch = q["tag-match"] !== undefined && q.tag_match === undefined ? mode("tag-match") : mode("tag_match");
  const combine = (ts: Test[], how: string): Test =>
    ts.length === 0 ? () => true : how === "any" ? (r) => ts.some((t) => t(r)) : (r) => ts.every((t) => t(r));
  const main = combine(tests, match);
  const tags = combine(tagTests, tagMatch);
  const out = [...records].filter((r) => main(r) && tags(r));
  return order(out, q);
}

const ORDERS = new Map<string, (r: DnsRecord) => string | number>([
  ["type", (r) => r.type],
  ["name", (r) => r.name],
  ["content", (r) => r.content.toLowerCase()],
  ["ttl", (r) => r.ttl],
  ["proxied", (r) => (r.proxied ? 1 : 0)],
]);

function order(list: DnsRecord[], q: Query): DnsRecord[] {
  const by = q.order === undefined ? undefined : str(q.order);
  const key = by === undefined ? undefined : ORDERS.get(by);
  if (by !== undefined && !key) throw DnsErrors.orderInvalid(ORDERS.keys());
  const dir = q.direction === undefined ? "asc" : str(q.direction);
  if (dir !== "asc" && dir !== "desc") throw DnsErrors.directionInvalid();
  // Without an order the zone's own order (creation) is kept: stable pages at no sorting cost.
  if (key === undefined) return dir === "desc" ? list.reverse() : list;
  const sign = dir === "desc" ? -1 : 1;
  // Ties keep creation order, so pages are stable between requests.
  return list.sort((a, b) => {
    const x = key(a);
    const y = key(b);
    if (x < y) return -sign;
    if (x > y) return sign;
    return a.created_on < b.created_on ? -1 : a.created_on > b.created_on ? 1 : a.id < b.id ? -1 : 1;
  });
}
