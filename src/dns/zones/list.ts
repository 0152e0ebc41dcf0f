import { DnsErrors } from "../errors.js";
import type { Zone } from "../model.js";
import { toAscii } from "./names.js";

type Query = Record<string, unknown>;
const one = (v: unknown) => (Array.isArray(v) ? String(v[v.length - 1]) : v === undefined ? undefined : String(v));

/** `name=contains:foo`, `name=starts_with:foo`, ... as the zones list accepts them; plain `name=foo` is equality. */
function parseNameFilter(raw: string): { op: string; want: string } {
  const m = /^(equal|not_equal|starts_with|ends_with|contains)(_case_sensitive)?:(.*)$/.exec(raw);
  const op = m?.[1] ?? "equal";
  const want = toAscii((m ? m[3] : raw).replace(/\.$/, ""));
  // Zone names are stored lowercase.
  return { op, want: m?.[2] ? want : want.toLowerCase() };
}

function nameTest(raw: string): (name: string) => boolean {
  const { op, want: w } = parseNameFilter(raw);
  return (n) => {
    switch (op) {
      case "not_equal":
        return n !== w;
      case "starts_with":
        return n.startsWith(w);
      case "ends_with":
        return n.endsWith(w);
      case "contains":
        return n.includes(w);
      default:
        return n === w;
    }
  };
}

/** The one zone name a list asks for (`name=foo`, `name=equal:foo`), or undefined: what to catch up on before listing. */
export function exactZoneName(q: Query): string | undefined {
  const raw = one(q.name);
  if (!raw) return undefined;
  const { op, want } = parseNameFilter(raw);
  return op === "equal" && want.length > 0 && want.length <= 253 ? want : undefined;
}

/**
 * Filters and orders zones for GET /zones: name (with its operators), status, account.id, account.name, combined
 * by `match` (all = AND, any = OR), then `order` and `direction`. `accountName` names the accounts the caller sees.
 */
export function filterZones(zones: Iterable<Zone>, q: Query, accountName: (accountId: string) => string): Zone[] {
  const tests: ((z: Zone) => boolean)[] = [];
  const name = one(q.name);
  if (name) {
    const test = nameTest(name);
    tests.push((z) => test(z.name));
  }
  const status = one(q.status);
  if (status) tests.push(() => status === "active");
  const acc = one(q["account.id"]);
  if (acc) tests.push((z) => z.account_id === acc);
  const accName = one(q["account.name"]);
  if (accName) tests.push((z) => accountName(z.account_id).toLowerCase().includes(accName.toLowerCase()));
  const match = one(q.match) ?? "all";
  if (match !== "all" && match !== "any") throw DnsErrors.matchMode("match");
  const orderBy = one(q.order) ?? "name";
  const keys = new Map<string, (z: Zone) => string>([
    ["name", (z) => z.name],
    ["status", () => "active"],
    ["account.id", (z) => z.account_id],
    ["account.name", (z) => accountName(z.account_id)],
    ["plan.id", () => ""],
  ]);
  const sortKey = keys.get(orderBy);
  if (!sortKey) throw DnsErrors.orderInvalid(keys.keys());
  const sign = one(q.direction) === "desc" ? -1 : 1;
  return [...zones]
    .filter((z) => tests.length === 0 || (match === "any" ? tests.some((t) => t(z)) : tests.every((t) => t(z))))
    .sort((a, b) => sign * (sortKey(a).localeCompare(sortKey(b)) || a.name.localeCompare(b.name)));
}
