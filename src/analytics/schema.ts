import { buildSchema, execute, GraphQLError, parse, validate, type DocumentNode, type GraphQLSchema } from "graphql";
import type { Permission } from "../core/auth/permissions.js";
import { EdgeError } from "../core/errors.js";
import type { AnalyticsDataset } from "./dataset.js";
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

/** Bounds on one query: its size in tokens, and how many dataset fields it may resolve (aliases repeat them). */
export const QueryLimits = { tokens: 2000, datasetReads: 20 } as const;

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
  ) {
    const fields = datasets.map((d) => `  ${d.field}${d.signature}`).join("\n");
    this.schema = buildSchema(`
      "A time, as an ISO 8601 string (2024-09-01T00:00:00Z)"
      scalar Time
      "An unsigned 64-bit count or size, as a JSON number"
      scalar uint64
      type Query { viewer: Viewer! }
      type Viewer { accounts(filter: AccountFilter_InputObject!): [Account!]! }
      input AccountFilter_InputObject { accountTag: String }
      type Account {
      ${fields}
      }
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
    const invalid = validate(this.schema, document);
    if (invalid.length > 0) return { data: null, errors: invalid.map(toJson) };
    let reads = 0;
    const account = (accountId: string) =>
      Object.fromEntries(
        this.datasets.map((d) => [
          d.field,
          (args: Record<string, unknown>) => {
            if (++reads > QueryLimits.datasetReads) throw new GraphQLError(AnalyticsMessages.tooManyDatasetReads(QueryLimits.datasetReads));
            if (!caller.can(accountId, d.permission)) throw new GraphQLError(AnalyticsMessages.datasetNotAuthorized(d.field, d.permission));
            return d.resolve(accountId, args).catch((err: unknown) => {
              // A refusal keeps its words; a fault is reported without its internals (the route logs `originalError`).
              if (err instanceof EdgeError) throw new GraphQLError(err.message);
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
          return [account(tag)];
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

/** A GraphQL error as the response carries it; anything else thrown is reported without its internals. */
function toJson(err: unknown): unknown {
  if (err instanceof GraphQLError) return err.toJSON();
  return { message: "internal error" };
}
