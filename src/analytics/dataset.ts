import type { Permission } from "../core/auth/permissions.js";

/**
 * One dataset of the GraphQL Analytics API (a field of `viewer.accounts`, e.g. `r2StorageAdaptiveGroups`): the port
 * through which an area adds its numbers. The area describes the field and its own types in GraphQL's SDL and answers
 * it for one account; the analytics area builds the schema, checks the caller and runs the query (schema.ts).
 */
export interface AnalyticsDataset {
  /** The field on an account, e.g. `r2StorageAdaptiveGroups`. */
  readonly field: string;
  /** The field's arguments and type, as SDL follows the field's name: `(limit: Int!, filter: X): [Y!]!`. */
  readonly signature: string;
  /** The SDL of the types the signature names (inputs, enums, rows), each prefixed with the dataset's name. */
  readonly typeDefs: string;
  /** What the caller must hold on the account to read it (an area's own read permission). */
  readonly permission: Permission;
  /** The rows for one account; `args` are the field's arguments, checked by GraphQL against the signature. */
  resolve(accountId: string, args: Record<string, unknown>): Promise<readonly unknown[]>;
}
