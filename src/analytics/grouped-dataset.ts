import type { Permission } from "../core/auth/permissions.js";
import { DatasetRefusal, type AnalyticsDataset, type Rollups } from "./dataset.js";
import type { RollupGroup, RollupQuery } from "./rollups/store.js";

/** A dimension of a grouped dataset: the rollup column (0..4) it is kept in, and its GraphQL type. */
export interface GroupedDimension {
  column: number;
  type: "String" | "Int";
}

/** A number under `sum { … }`: a rollup sum column (0..7), or the count; `scale` divides what is stored (cost in micro-dollars). */
export interface GroupedSum {
  from: number | "count";
  type?: "uint64" | "Float";
  scale?: number;
}

/**
 * A dataset answered from the per-minute rollups in the hosted "adaptive groups" shape: `(limit, filter, orderBy)`,
 * rows with `sum { … }` (and `count` where hosted has one) and `dimensions { … }`, grouped by the dimensions a query
 * selects. Times are the rollups' minutes: `datetime` is a minute's start.
 */
export interface GroupedDatasetSpec {
  /** The field, e.g. `workersInvocationsAdaptive`. */
  field: string;
  scope: "account" | "zone";
  /** The hosted type name of a row (`AccountWorkersInvocationsAdaptive`): its filter, order, sum and dimension types are named after it. */
  typeName: string;
  /** The rollup dataset it reads. */
  dataset: string;
  permission: Permission;
  /** Whether rows have a top-level `count` (hosted's `…Groups` do; `workersInvocationsAdaptive` has `sum.requests`). */
  count: boolean;
  dimensions: Record<string, GroupedDimension>;
  sums: Record<string, GroupedSum>;
  /**
   * Hosted fields the rollups cannot answer: in the schema, so a hosted query validates, and refused with a GraphQL
   * error saying why when a query selects them (never answered 0): `quantiles { … }` (Float fields) and sums.
   */
  unmeasured?: {
    quantiles?: { fields: readonly string[]; why: string };
    sums?: Record<string, string>;
  };
}

const TIME_DIMS = {
  datetime: "minute",
  datetimeMinute: "minute",
  datetimeFiveMinutes: "five_minutes",
  datetimeFifteenMinutes: "fifteen_minutes",
  datetimeHour: "hour",
  date: "day",
} as const;
type TimeDim = keyof typeof TIME_DIMS;

/** The largest `limit` (the hosted API's bound on adaptive groups), and of an `_in` filter's list. */
export const MAX_LIMIT = 10_000;
const MAX_IN = 100;

const iso = (seconds: number) => new Date(seconds * 1000).toISOString().replace(".000Z", "Z");

function seconds(field: string, value: unknown): number {
  const t = Date.parse(String(value));
  if (Number.isNaN(t)) throw new DatasetRefusal(`filter.${field}: "${String(value).slice(0, 40)}" is not a time (use ISO 8601, 2024-09-01T00:00:00Z)`);
  return Math.floor(t / 1000);
}

/** The minutes `[from, to)` a filter's times and dates leave, within retention; undefined when none. */
export function timeRange(f: Record<string, unknown>, retentionSeconds: number, nowMs = Date.now()): { from: number; to: number } | undefined {
  const now = Math.floor(nowMs / 1000);
  let from = now - retentionSeconds;
  let to = now + 60;
  if (f.datetime_geq != null) from = Math.max(from, seconds("datetime_geq", f.datetime_geq));
  if (f.datetime_gt != null) from = Math.max(from, seconds("datetime_gt", f.datetime_gt) + 1);
  if (f.date_geq != null) from = Math.max(from, seconds("date_geq", `${String(f.date_geq)}T00:00:00Z`));
  if (f.date != null) {
    from = Math.max(from, seconds("date", `${String(f.date)}T00:00:00Z`));
    to = Math.min(to, seconds("date", `${String(f.date)}T00:00:00Z`) + 86_400);
  }
  if (f.datetime_leq != null) to = Math.min(to, seconds("datetime_leq", f.datetime_leq) + 1);
  if (f.datetime_lt != null) to = Math.min(to, seconds("datetime_lt", f.datetime_lt));
  if (f.date_leq != null) to = Math.min(to, seconds("date_leq", `${String(f.date_leq)}T00:00:00Z`) + 86_400);
  // A minute counts when its start is in the range (the rollups know no finer time).
  const fromMinute = Math.ceil(from / 60) * 60;
  return to <= fromMinute ? undefined : { from: fromMinute, to };
}

/** The dataset of `spec`, answered from `rollups`. */
export function groupedDataset(spec: GroupedDatasetSpec, rollups: Rollups): AnalyticsDataset {
  const t = spec.typeName;
  const dims = Object.entries(spec.dimensions);
  const sums = Object.entries(spec.sums);
  const dimFilters = dims.map(([name, d]) => `${name}: ${d.type}\n${name}_neq: ${d.type}\n${name}_in: [${d.type}!]`).join("\n");
  const quantiles = spec.unmeasured?.quantiles;
  const unmeasuredSums = Object.keys(spec.unmeasured?.sums ?? {});
  const orderNames = [...(spec.count ? ["count"] : []), ...Object.keys(TIME_DIMS), ...dims.map(([n]) => n), ...sums.map(([n]) => `sum_${n}`)];
  const typeDefs = `
    input ${t}Filter_InputObject {
      datetime_geq: Time
      datetime_gt: Time
      datetime_leq: Time
      datetime_lt: Time
      date: Date
      date_geq: Date
      date_leq: Date
      ${dimFilters}
    }
    enum ${t}OrderBy { ${orderNames.map((n) => `${n}_ASC ${n}_DESC`).join(" ")} }
    ${sums.length ? `type ${t}Sum { ${sums.map(([n, s]) => `${n}: ${s.type ?? "uint64"}!`).join(" ")} ${unmeasuredSums.map((n) => `${n}: uint64!`).join(" ")} }` : ""}
    ${quantiles ? `type ${t}Quantiles { ${quantiles.fields.map((n) => `${n}: Float!`).join(" ")} }` : ""}
    type ${t}Dimensions {
      datetime: Time! datetimeMinute: Time! datetimeFiveMinutes: Time! datetimeFifteenMinutes: Time! datetimeHour: Time! date: Date!
      ${dims.map(([n, d]) => `${n}: ${d.type}!`).join(" ")}
    }
    type ${t} {
      ${spec.count ? "count: uint64!" : ""}
      ${sums.length ? `sum: ${t}Sum!` : ""}
      ${quantiles ? `quantiles: ${t}Quantiles!` : ""}
      dimensions: ${t}Dimensions!
    }
  `;
  return {
    field: spec.field,
    scope: spec.scope,
    signature: `(limit: uint64!, filter: ${t}Filter_InputObject, orderBy: [${t}OrderBy!]): [${t}!]!`,
    typeDefs,
    permission: spec.permission,
    async resolve(scopeId, args, requested) {
      const limit = Number(args.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw new DatasetRefusal(`limit: must be a whole number from 1 to ${MAX_LIMIT}`);
      if (quantiles && requested.fields.includes("quantiles")) throw new DatasetRefusal(`${spec.field}: quantiles are not measured here: ${quantiles.why}`);
      for (const n of requested.sums)
        if (unmeasuredSums.includes(n)) throw new DatasetRefusal(`${spec.field}: sum.${n} is not measured here: ${spec.unmeasured!.sums![n]}`);
      const f = (args.filter ?? {}) as Record<string, unknown>;
      const range = timeRange(f, rollups.retentionSeconds);
      if (!range) return [];
      const where: RollupQuery["where"][number][] = [];
      for (const [name, d] of dims) {
        if (f[name] != null) where.push({ dim: d.column, op: "eq", value: String(f[name]) });
        if (f[`${name}_neq`] != null) where.push({ dim: d.column, op: "neq", value: String(f[`${name}_neq`]) });
        const list = f[`${name}_in`] as unknown[] | null | undefined;
        if (list != null) {
          if (list.length > MAX_IN) throw new DatasetRefusal(`filter.${name}_in: at most ${MAX_IN} values`);
          where.push({ dim: d.column, op: "in", values: list.map(String) });
        }
      }
      const names = requested.dimensions;
      const groupBy: RollupGroup[] = names.map((n) => (n in TIME_DIMS ? { time: TIME_DIMS[n as TimeDim] } : { dim: spec.dimensions[n].column }));
      const orderBy = ((args.orderBy ?? []) as string[]).map((o) => {
        const desc = o.endsWith("_DESC");
        const field = o.slice(0, o.lastIndexOf("_"));
        if (field === "count") return { by: "count" as const, desc };
        if (field.startsWith("sum_")) {
          const s = spec.sums[field.slice(4)];
          return { by: s.from === "count" ? ("count" as const) : { sum: s.from }, desc };
        }
        const group = names.indexOf(field);
        if (group < 0) throw new DatasetRefusal(`orderBy: ${o} orders by ${field}, which the query does not select under dimensions`);
        return { by: { group }, desc };
      });
      // The sum columns the selection and the order read (the others are not added up).
      const sumColumns = new Set<number>();
      for (const n of requested.sums) {
        const from = Object.hasOwn(spec.sums, n) ? spec.sums[n].from : undefined;
        if (typeof from === "number") sumColumns.add(from);
      }
      for (const o of orderBy) if (typeof o.by === "object" && "sum" in o.by && o.by.sum !== undefined) sumColumns.add(o.by.sum);
      const groups = await rollups.query({
        dataset: spec.dataset,
        scope: scopeId,
        from: range.from,
        to: range.to,
        where,
        groupBy,
        orderBy,
        limit,
        sums: [...sumColumns],
      });
      // How each selected dimension's key reads, decided once per query rather than per group.
      const readers = names.map((n): ((k: string | number) => unknown) => {
        if (n === "date") return (k) => iso(Number(k)).slice(0, 10);
        if (n in TIME_DIMS) return (k) => iso(Number(k));
        // A number counted under "(other)" (past the cardinality bound) reads as 0.
        return spec.dimensions[n].type === "Int" ? (k) => Number(k) || 0 : (k) => k;
      });
      return groups.map((g) => {
        // Keyed by the spec's dimension names (validated by GraphQL), never by anything the caller wrote.
        const dimensions: Record<string, unknown> = {};
        for (let i = 0; i < names.length; i++) dimensions[names[i]] = readers[i](g.keys[i]);
        const sum: Record<string, number> = {};
        for (const [n, s] of sums) {
          const v = s.from === "count" ? g.count : g.sums[s.from];
          sum[n] = s.scale ? v / s.scale : v;
        }
        return { count: g.count, sum, dimensions };
      });
    },
  };
}
