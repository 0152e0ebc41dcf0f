import {
  buildSchema,
  execute,
  GraphQLError,
  Kind,
  parse,
  specifiedRules,
  validate,
  type DocumentNode,
  type GraphQLResolveInfo,
  type GraphQLSchema,
  type SelectionSetNode,
  type ValidationRule,
} from "graphql";
import type { Permission } from "../core/auth/permissions.js";
import { EdgeError } from "../core/errors.js";
import type { AnalyticsDataset, RequestedFields } from "./dataset.js";
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
 */
export const QueryLimits = { tokens: 2000, datasetReads: 20, introspectionFields: 5 } as const;

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
    const fields = fieldsOf("account");
    const zoneFields = fieldsOf("zone");
    const zones = zoneFields
      ? `extend type Viewer { zones(filter: ZoneFilter_InputObject!): [Zone!]! }
         input ZoneFilter_InputObject { zoneTag: String }
         type Zone {
         ${zoneFields}
         }`
      : "";
    this.schema = buildSchema(`
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
      ${fields}
      }
      ${zones}
      ${datasets.map((d) => d.typeDefs).join("\n")}
    `);
  }

  /** Runs one query for `caller`. */
  async run(request: GraphqlRequest, caller: AnalyticsCaller): Promise<GraphqlResponse> {
    let document: DocumentNode;
    try {
      document = parse(request.query, { maxTokens: QueryLimits.tokens, noLocation: false });
    } catch (err) {
      return { data: null, errors: [toJson(err)] };
    }
    const invalid = validate(this.schema, document, [...specifiedRules, introspectionBound]);
    if (invalid.length > 0) return { data: null, errors: invalid.map(toJson) };
    let reads = 0;
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
              return d.resolve(scopeId, args, requestedFields(info)).catch((err: unknown) => {
                // A refusal keeps its words; a fault is reported without its internals (the route logs `originalError`).
                if (err instanceof EdgeError || err instanceof GraphQLError) throw new GraphQLError(err.message);
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
      schema: this.schema,
      document,
      rootValue,
      variableValues: request.variables,
      operationName: request.operationName,
    });
    for (const e of result.errors ?? []) if (e.originalError && !(e.originalError instanceof GraphQLError)) this.onFault?.(e.originalError, e.path);
    return { data: result.data ?? null, errors: result.errors?.map(toJson) ?? null };
  }
}

/** The fields a dataset's selection asks for under `dimensions` (fragments included). */
function requestedFields(info: GraphQLResolveInfo): RequestedFields {
  const dimensions: string[] = [];
  const visit = (set: SelectionSetNode | undefined, inDimensions: boolean) => {
    for (const sel of set?.selections ?? []) {
      if (sel.kind === Kind.FIELD) {
        if (inDimensions) {
          if (!dimensions.includes(sel.name.value) && sel.name.value !== "__typename") dimensions.push(sel.name.value);
        } else if (sel.name.value === "dimensions") visit(sel.selectionSet, true);
      } else if (sel.kind === Kind.INLINE_FRAGMENT) visit(sel.selectionSet, inDimensions);
      else if (sel.kind === Kind.FRAGMENT_SPREAD) visit(info.fragments[sel.name.value]?.selectionSet, inDimensions);
    }
  };
  for (const node of info.fieldNodes) visit(node.selectionSet, false);
  return { dimensions };
}

/** A GraphQL error as the response carries it; anything else thrown is reported without its internals. */
function toJson(err: unknown): unknown {
  if (err instanceof GraphQLError) return err.toJSON();
  return { message: "internal error" };
}
