import {
  buildSchema,
  execute,
  getDirectiveValues,
  getNamedType,
  GraphQLError,
  GraphQLIncludeDirective,
  GraphQLSkipDirective,
  isLeafType,
  isListType,
  isNonNullType,
  isObjectType,
  Kind,
  NoFragmentCyclesRule,
  parse,
  specifiedRules,
  validate,
  type DocumentNode,
  type FieldNode,
  type GraphQLNamedType,
  type GraphQLOutputType,
  type GraphQLResolveInfo,
  type GraphQLSchema,
  type SelectionSetNode,
  type ValidationRule,
} from "graphql";
import type { Permission } from "../core/auth/permissions.js";
import { EdgeError } from "../core/errors.js";
import { DatasetRefusal, type AnalyticsDataset, type RequestedFields } from "./dataset.js";
import { AnalyticsMessages } from "./errors.js";

/** Who asks: the accounts it sees, and what it holds on each (the v4 API's principal). */
export interface AnalyticsCaller {
  sees(accountId: string): boolean;
  can(accountId: string, permission: Permission): boolean;
}

/** A GraphQL request as POST /graphql carries it. */
export interface GraphqlRequest {
  query: string;
  variables?: Record<string, unknown>;
  operationName?: string;
}

/** GraphQL's answer: `data` (null when the query did not run) and `errors` (null when there were none), as hosted. */
export interface GraphqlResponse {
  data: unknown;
  errors: unknown[] | null;
}

/**
 * Bounds on one query: its size in tokens, how many dataset fields it may resolve (aliases repeat them), and how
 * many introspection fields (`__schema`, `__type`) it may ask: each answers the whole schema's types again, so 80
 * aliased `__schema` fit in the tokens and took a second of the event loop and a megabyte (one is what tools ask).
 * `rows`: the rows (groups) its dataset fields answer in all (ours; hosted bounds each field's `limit` only): 20
 * reads of 10,000 groups answered 200,000, 30 MB of JSON and +340 MiB of the platform's peak RSS
 * (bench/analytics/twenty-reads.mjs); three full reads fit.
 * `values`: the leaf values its dataset fields answer in all, rows times the leaves each row selects (ours): aliases
 * repeat a leaf at no cost in rows, so 570 aliases in a fragment spread by 20 reads made one row of the rollups 11,400
 * values, and 10,000 rows 114 million (minutes of the event loop, gigabytes of JSON). 300,000 is 30,000 rows of ten
 * fields; the usual query is far under it (the 7,200-group answer of seven fields: 50,400).
 * `sameFieldNodes` and `selectionVisits` (ours): how often one field of the answer may be named, and how many
 * selections the check of that may walk (mergedFieldsRefusal).
 */
export const QueryLimits = {
  tokens: 2000,
  datasetReads: 20,
  introspectionFields: 5,
  rows: 30_000,
  values: 300_000,
  sameFieldNodes: 25,
  selectionVisits: 10_000,
} as const;

/**
 * Refuses (the message; undefined when within bounds), before graphql-js validates it, a document where one field of
 * the answer is named by more than QueryLimits.sameFieldNodes field nodes (`viewer { … } viewer { … }`, or the same
 * through fragments and nesting: `a.b` counts every `b` under every `a`). graphql-js' OverlappingFieldsCanBeMerged
 * compares every pair of them (and their selections pairwise in turn), so 500 `viewer { __typename }` in the token
 * bound held the event loop 0.4–0.8 s a query. Fragments are expanded once per merged field (as collectSubfields
 * does), and the walk stops after QueryLimits.selectionVisits selections (a document of fragments spread under many
 * names). Unused fragments are walked too: validation compares within them before it refuses them.
 */
function mergedFieldsRefusal(document: DocumentNode): string | undefined {
  const fragments = new Map<string, SelectionSetNode>();
  for (const def of document.definitions) if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def.selectionSet);
  let visits = 0;
  let refusal: string | undefined;
  // The selections merged into one response field (`sets`): counts each response key's nodes, then goes down.
  const walk = (sets: readonly SelectionSetNode[]): void => {
    const byKey = new Map<string, { nodes: number; subsets: SelectionSetNode[] }>();
    const expanded = new Set<string>();
    const visit = (set: SelectionSetNode) => {
      for (const sel of set.selections) {
        if (refusal !== undefined) return;
        if (++visits > QueryLimits.selectionVisits) {
          refusal = AnalyticsMessages.tooManySelections(QueryLimits.selectionVisits);
          return;
        }
        if (sel.kind === Kind.FIELD) {
          const key = sel.alias?.value ?? sel.name.value;
          let entry = byKey.get(key);
          if (!entry) byKey.set(key, (entry = { nodes: 0, subsets: [] }));
          entry.nodes++;
          if (sel.selectionSet) entry.subsets.push(sel.selectionSet);
        } else if (sel.kind === Kind.INLINE_FRAGMENT) visit(sel.selectionSet);
        else if (!expanded.has(sel.name.value)) {
          expanded.add(sel.name.value);
          const fragment = fragments.get(sel.name.value);
          if (fragment) visit(fragment);
        }
      }
    };
    for (const set of sets) visit(set);
    for (const [key, entry] of byKey) {
      if (refusal !== undefined) return;
      if (entry.nodes > QueryLimits.sameFieldNodes) {
        refusal = AnalyticsMessages.tooManySameFields(key.slice(0, 100), QueryLimits.sameFieldNodes);
        return;
      }
      if (entry.subsets.length > 0) walk(entry.subsets);
    }
  };
  for (const def of document.definitions) {
    if (refusal !== undefined) break;
    if (def.kind === Kind.OPERATION_DEFINITION || def.kind === Kind.FRAGMENT_DEFINITION) walk([def.selectionSet]);
  }
  return refusal;
}

/** Refuses a document with more than QueryLimits.introspectionFields `__schema`/`__type` fields (fragments included). */
const introspectionBound: ValidationRule = (context) => {
  let seen = 0;
  return {
    Field(node) {
      if (node.name.value !== "__schema" && node.name.value !== "__type") return;
      if (++seen === QueryLimits.introspectionFields + 1)
        context.reportError(new GraphQLError(AnalyticsMessages.tooManyIntrospectionFields(QueryLimits.introspectionFields), { nodes: node }));
    },
  };
};

/**
 * The GraphQL Analytics API's schema, as the hosted one starts: `viewer { accounts(filter: {accountTag}) { <dataset>
 * (...) { ... } } }`, with one field per dataset the areas hand over (dataset.ts). A field or dataset the schema does
 * not have is a GraphQL validation error, never an empty answer; an account the caller cannot see, or a dataset it
 * may not read there, is an error of that field.
 */
export class AnalyticsSchema {
  private readonly schema: GraphQLSchema;
  /**
   * The same schema with each dataset field typed as a leaf (`DatasetRows`): a query runs on it once validated
   * against the real one, and a dataset's rows are shaped to the query's selection in one pass (shapeRows). In
   * graphql-js every field of every row costs a resolver call and an info object; 7,200 groups of seven fields took
   * most of a 30-day query's time that way (docs/benchmarks.md, "GraphQL Analytics over 30 days").
   */
  private readonly fastSchema: GraphQLSchema;

  constructor(
    private readonly datasets: readonly AnalyticsDataset[],
    /** Told of a dataset's fault (not a refusal), to log it. */
    private readonly onFault?: (err: Error, path: readonly (string | number)[] | undefined) => void,
    /** The account of a zone (undefined when there is none): zone datasets are checked against it. */
    private readonly zoneAccount: (zoneId: string) => string | undefined = () => undefined,
  ) {
    const fieldsOf = (scope: "account" | "zone") =>
      datasets
        .filter((d) => (d.scope ?? "account") === scope)
        .map((d) => `  ${d.field}${d.signature}`)
        .join("\n");
    const sdl = (fieldsOf: (scope: "account" | "zone") => string, extra = "") => {
      const zoneFields = fieldsOf("zone");
      const zones = zoneFields
        ? `extend type Viewer { zones(filter: ZoneFilter_InputObject!): [Zone!]! }
         input ZoneFilter_InputObject { zoneTag: String }
         type Zone {
         ${zoneFields}
         }`
        : "";
      return `
      "A time, as an ISO 8601 string (2024-09-01T00:00:00Z)"
      scalar Time
      "A calendar date, as an ISO 8601 string (2024-09-01)"
      scalar Date
      "An unsigned 64-bit count or size, as a JSON number"
      scalar uint64
      type Query { viewer: Viewer! }
      type Viewer { accounts(filter: AccountFilter_InputObject!): [Account!]! }
      input AccountFilter_InputObject { accountTag: String }
      type Account {
      ${fieldsOf("account")}
      }
      ${zones}
      ${extra}
      ${datasets.map((d) => d.typeDefs).join("\n")}
    `;
    };
    this.schema = buildSchema(sdl(fieldsOf));
    this.fastSchema = buildSchema(
      sdl(
        (scope) =>
          datasets
            .filter((d) => (d.scope ?? "account") === scope)
            .map((d) => `  ${d.field}${argumentsOf(d.signature)}: DatasetRows!`)
            .join("\n"),
        `"A dataset's rows, shaped to the query's selection" scalar DatasetRows`,
      ),
    );
  }

  /** Runs one query for `caller`. */
  async run(request: GraphqlRequest, caller: AnalyticsCaller): Promise<GraphqlResponse> {
    let document: DocumentNode;
    try {
      document = parse(request.query, { maxTokens: QueryLimits.tokens, noLocation: false });
    } catch (err) {
      return { data: null, errors: [toJson(err)] };
    }
    // Fragment cycles first: mergedFieldsRefusal follows spreads down, and `fragment A on Viewer { x { ...A } }` took
    // it down without end (a RangeError, the request a 500). graphql-js' rule is linear in the document.
    const cycles = validate(this.schema, document, [NoFragmentCyclesRule]);
    if (cycles.length > 0) return { data: null, errors: cycles.map(toJson) };
    const overBound = mergedFieldsRefusal(document);
    if (overBound !== undefined) return { data: null, errors: [toJson(new GraphQLError(overBound))] };
    const invalid = validate(this.schema, document, [...specifiedRules, introspectionBound]);
    if (invalid.length > 0) return { data: null, errors: invalid.map(toJson) };
    let reads = 0;
    let answered = 0;
    let values = 0;
    // Dataset reads run one at a time, the event loop yielded before each: graphql-js starts every field's resolver
    // in one go, and SQLite reads run on the main thread, so 20 reads ran back to back without a turn of the event
    // loop (5 s of CPU for 20 reads of 10,000 groups, bench/analytics/twenty-reads.mjs). A read past QueryLimits.rows
    // or QueryLimits.values is refused; the reads after it are refused without reading.
    let previous: Promise<unknown> = Promise.resolve();
    // Introspection describes the real schema, so a query asking for it runs there (and its rows take graphql-js's path).
    const schema = asksIntrospection(document) ? this.schema : this.fastSchema;
    const rowTypes = schema === this.fastSchema ? this.schema : undefined;
    // The fields of one account (or zone: `scopeId`, owned by `accountId`).
    const scoped = (scope: "account" | "zone", scopeId: string, accountId: string) =>
      Object.fromEntries(
        this.datasets
          .filter((d) => (d.scope ?? "account") === scope)
          .map((d) => [
            d.field,
            (args: Record<string, unknown>, _context: unknown, info: GraphQLResolveInfo) => {
              if (++reads > QueryLimits.datasetReads) throw new GraphQLError(AnalyticsMessages.tooManyDatasetReads(QueryLimits.datasetReads));
              if (!caller.can(accountId, d.permission)) throw new GraphQLError(AnalyticsMessages.datasetNotAuthorized(d.field, d.permission));
              const requested = requestedFields(info);
              const perRow = valuesPerRow(this.schema, scope, d.field, info);
              const refuseOver = () => {
                if (answered > QueryLimits.rows) throw new GraphQLError(AnalyticsMessages.tooManyRows(QueryLimits.rows));
                if (values > QueryLimits.values) throw new GraphQLError(AnalyticsMessages.tooManyValues(QueryLimits.values));
              };
              const shaped = previous
                .then(() => new Promise((resolve) => setImmediate(resolve)))
                .then(async () => {
                  refuseOver();
                  const rows = await d.resolve(scopeId, args, requested);
                  // Refused before the rows are shaped or serialized: the cost the aliases multiply.
                  answered += rows.length;
                  values += rows.length * perRow;
                  refuseOver();
                  return rowTypes ? shapeRows(rowTypes, scope, d.field, info, rows) : rows;
                });
              previous = shaped.catch(() => undefined);
              return shaped.catch((err: unknown) => {
                // A refusal keeps its words; a fault is reported without its internals (the route logs `originalError`).
                if (err instanceof EdgeError || err instanceof GraphQLError || err instanceof DatasetRefusal) throw new GraphQLError(err.message);
                throw new GraphQLError(AnalyticsMessages.datasetFailed(d.field), { originalError: err as Error });
              });
            },
          ]),
      );
    const rootValue = {
      viewer: () => ({
        accounts: ({ filter }: { filter: { accountTag?: string | null } }) => {
          const tag = filter.accountTag;
          if (!tag) throw new GraphQLError(AnalyticsMessages.accountTagRequired());
          if (!caller.sees(tag)) throw new GraphQLError(AnalyticsMessages.accountNotAuthorized(tag));
          return [scoped("account", tag, tag)];
        },
        zones: ({ filter }: { filter: { zoneTag?: string | null } }) => {
          const tag = filter.zoneTag;
          if (!tag) throw new GraphQLError(AnalyticsMessages.zoneTagRequired());
          const accountId = this.zoneAccount(tag);
          // A zone of another account reads as one that does not exist.
          if (accountId === undefined || !caller.sees(accountId)) throw new GraphQLError(AnalyticsMessages.zoneNotAuthorized(tag));
          return [scoped("zone", tag, accountId)];
        },
      }),
    };
    const result = await execute({
      schema,
      document,
      rootValue,
      variableValues: request.variables,
      operationName: request.operationName,
    });
    for (const e of result.errors ?? []) {
      // A dataset's fault arrives wrapped twice (datasetFailed's GraphQLError, then graphql-js's located one).
      let cause: Error | undefined = e.originalError;
      while (cause instanceof GraphQLError && cause.originalError) cause = cause.originalError;
      if (cause && !(cause instanceof GraphQLError)) this.onFault?.(cause, e.path);
    }
    return { data: result.data ?? null, errors: result.errors?.map(toJson) ?? null };
  }
}

/** The fields a dataset's selection asks for under `dimensions` and `sum` (fragments included). */
function requestedFields(info: GraphQLResolveInfo): RequestedFields {
  const dimensions: string[] = [];
  const sums: string[] = [];
  const fields: string[] = [];
  // A fragment adds the same names however often it is spread: each is read once per list (a document of fragments
  // spreading the next one twice names 2^n spreads in a few hundred tokens).
  const expanded = new Set<string>();
  const visit = (set: SelectionSetNode | undefined, into: string[] | undefined) => {
    for (const sel of set?.selections ?? []) {
      if (sel.kind === Kind.FIELD) {
        if (into) {
          if (!into.includes(sel.name.value) && sel.name.value !== "__typename") into.push(sel.name.value);
        } else {
          if (!fields.includes(sel.name.value)) fields.push(sel.name.value);
          if (sel.name.value === "dimensions") visit(sel.selectionSet, dimensions);
          else if (sel.name.value === "sum") visit(sel.selectionSet, sums);
        }
      } else if (sel.kind === Kind.INLINE_FRAGMENT) visit(sel.selectionSet, into);
      else if (sel.kind === Kind.FRAGMENT_SPREAD) {
        const once = `${into === undefined ? "fields" : into === dimensions ? "dimensions" : "sums"} ${sel.name.value}`;
        if (expanded.has(once)) continue;
        expanded.add(once);
        visit(info.fragments[sel.name.value]?.selectionSet, into);
      }
    }
  };
  for (const node of info.fieldNodes) visit(node.selectionSet, undefined);
  return { dimensions, sums, fields };
}

/** `(limit: …, filter: …)` of a signature `(limit: …, filter: …): [Row!]!` (its arguments, as written). */
function argumentsOf(signature: string): string {
  const end = signature.lastIndexOf(")");
  return end < 0 ? "" : signature.slice(0, end + 1);
}

/** Whether a document asks for `__schema` or `__type` anywhere (fragments included). */
function asksIntrospection(document: DocumentNode): boolean {
  let found = false;
  const visit = (set: SelectionSetNode | undefined) => {
    for (const sel of set?.selections ?? []) {
      if (found) return;
      if (sel.kind === Kind.FIELD) {
        if (sel.name.value === "__schema" || sel.name.value === "__type") found = true;
        else visit(sel.selectionSet);
      } else if (sel.kind === Kind.INLINE_FRAGMENT) visit(sel.selectionSet);
    }
  };
  for (const def of document.definitions) if (def.kind === Kind.OPERATION_DEFINITION || def.kind === Kind.FRAGMENT_DEFINITION) visit(def.selectionSet);
  return found;
}

/**
 * A dataset's rows (plain objects keyed by field name, as graphql-js would read them) as the query selects them: its
 * response keys (aliases) in order, fragments and @skip/@include applied, leaves serialized by their type, and a
 * missing non-null value an error, as graphql-js does. Objects are made without a prototype: aliases are the
 * caller's names.
 */
function shapeRows(schema: GraphQLSchema, scope: "account" | "zone", field: string, info: GraphQLResolveInfo, rows: readonly unknown[]): unknown {
  const parent = schema.getType(scope === "account" ? "Account" : "Zone");
  const type = isObjectType(parent) ? parent.getFields()[field]?.type : undefined;
  if (!type) throw new Error(`dataset ${field} is not in the schema`);
  return shaperOf(schema, info, type, info.fieldNodes, field)(rows);
}

type Shaper = (value: unknown) => unknown;

function shaperOf(schema: GraphQLSchema, info: GraphQLResolveInfo, type: GraphQLOutputType, nodes: readonly FieldNode[], path: string): Shaper {
  if (isNonNullType(type)) {
    const inner = shaperOf(schema, info, type.ofType, nodes, path);
    return (v) => {
      if (v == null) throw new Error(`${path}: a non-null field has no value`);
      return inner(v);
    };
  }
  if (isListType(type)) {
    const item = shaperOf(schema, info, type.ofType, nodes, path);
    return (v) => (v == null ? null : (v as unknown[]).map(item));
  }
  if (isLeafType(type)) return (v) => (v == null ? null : type.serialize(v));
  const objectType = getNamedType(type);
  if (!isObjectType(objectType)) throw new Error(`${path}: ${objectType.name} is not an object type`);
  const fields = objectType.getFields();
  const plan: { key: string; name: string; shape: Shaper | undefined }[] = [];
  for (const [key, fieldNodes] of collectSubfields(info, objectType.name, nodes)) {
    const name = fieldNodes[0].name.value;
    const def = fields[name];
    plan.push({ key, name, shape: name === "__typename" ? undefined : shaperOf(schema, info, def.type, fieldNodes, `${path}.${name}`) });
  }
  return (v) => {
    if (v == null) return null;
    const row = v as Record<string, unknown>;
    const out: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
    for (const p of plan) out[p.key] = p.shape ? p.shape(row[p.name]) : objectType.name;
    return out;
  };
}

/** The leaf values one row of a dataset field answers: its selection's leaves by response key (aliases and fragments counted, each fragment once). */
function valuesPerRow(schema: GraphQLSchema, scope: "account" | "zone", field: string, info: GraphQLResolveInfo): number {
  const parent = schema.getType(scope === "account" ? "Account" : "Zone");
  const type = isObjectType(parent) ? parent.getFields()[field]?.type : undefined;
  return type === undefined ? 1 : leavesOf(info, getNamedType(type), info.fieldNodes);
}

function leavesOf(info: GraphQLResolveInfo, type: GraphQLNamedType, nodes: readonly FieldNode[]): number {
  if (!isObjectType(type)) return 1;
  const fields = type.getFields();
  let n = 0;
  for (const fieldNodes of collectSubfields(info, type.name, nodes).values()) {
    const def = fields[fieldNodes[0].name.value];
    n += def === undefined ? 1 : leavesOf(info, getNamedType(def.type), fieldNodes);
  }
  return n;
}

/** The fields `nodes` select on an object type, by response key in order: fragments merged, @skip/@include applied. */
function collectSubfields(info: GraphQLResolveInfo, typeName: string, nodes: readonly FieldNode[]): Map<string, FieldNode[]> {
  const out = new Map<string, FieldNode[]>();
  const included = (node: Parameters<typeof getDirectiveValues>[1]) =>
    getDirectiveValues(GraphQLSkipDirective, node, info.variableValues)?.if !== true &&
    getDirectiveValues(GraphQLIncludeDirective, node, info.variableValues)?.if !== false;
  // Each fragment is expanded once per collection, as graphql-js' collectFields does: a second spread of it adds
  // nothing (a document of fragments spreading the next one twice names 2^n spreads in a few hundred tokens).
  const expanded = new Set<string>();
  const visit = (set: SelectionSetNode | undefined) => {
    for (const sel of set?.selections ?? []) {
      if (!included(sel)) continue;
      if (sel.kind === Kind.FIELD) {
        const key = sel.alias?.value ?? sel.name.value;
        const list = out.get(key);
        if (list) list.push(sel);
        else out.set(key, [sel]);
      } else if (sel.kind === Kind.INLINE_FRAGMENT) {
        if (!sel.typeCondition || sel.typeCondition.name.value === typeName) visit(sel.selectionSet);
      } else {
        const fragment = info.fragments[sel.name.value];
        if (!fragment || fragment.typeCondition.name.value !== typeName || expanded.has(sel.name.value)) continue;
        expanded.add(sel.name.value);
        visit(fragment.selectionSet);
      }
    }
  };
  for (const node of nodes) visit(node.selectionSet);
  return out;
}

/** A GraphQL error as the response carries it; anything else thrown is reported without its internals. */
function toJson(err: unknown): unknown {
  if (err instanceof GraphQLError) return err.toJSON();
  return { message: "internal error" };
}
