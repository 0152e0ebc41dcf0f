import type { Permission } from "../core/auth/permissions.js";
import type { RollupGroupRow, RollupQuery } from "./rollups/store.js";

/**
 * One dataset of the GraphQL Analytics API (a field of `viewer.accounts`, e.g. `r2StorageAdaptiveGroups`): the port
 * through which an area adds its numbers. The area describes the field and its own types in GraphQL's SDL and answers
 * it for one account; the analytics area builds the schema, checks the caller and runs the query (schema.ts).
 */
export interface AnalyticsDataset {
  /** The field on an account, e.g. `r2StorageAdaptiveGroups`, or on a zone (`httpRequestsAdaptiveGroups`). */
  readonly field: string;
  /** Whether the dataset is a field of `viewer.accounts` (the default) or of `viewer.zones`. */
  readonly scope?: "account" | "zone";
  /** The field's arguments and type, as SDL follows the field's name: `(limit: Int!, filter: X): [Y!]!`. */
  readonly signature: string;
  /** The SDL of the types the signature names (inputs, enums, rows), each prefixed with the dataset's name. */
  readonly typeDefs: string;
  /** What the caller must hold on the account (a zone's account) to read it. */
  readonly permission: Permission;
  /**
   * The rows for one account (or zone); `args` are the field's arguments, checked by GraphQL against the signature;
   * `requested` what the query selects (a grouped dataset groups by the dimensions asked for).
   */
  resolve(scopeId: string, args: Record<string, unknown>, requested: RequestedFields): Promise<readonly unknown[]>;
}

/** What a query selects of a dataset's rows. */
export interface RequestedFields {
  /** The fields selected under `dimensions { … }`, in the order written (none when it is not selected). */
  dimensions: string[];
  /** The fields selected under `sum { … }` (a grouped dataset adds up only those). */
  sums: string[];
  /** The fields selected on a row itself (`count`, `sum`, `dimensions`, …). */
  fields: string[];
}

/**
 * The per-minute rollups an area records its events into and answers its datasets from (rollups/): recording is a
 * map update (written to the store every few seconds); a query groups and sums in the store, over every node's rows.
 */
export interface Rollups {
  /**
   * Counts one event of `dataset` for `scope` (a zone or an account) at `atMs`, with its dimension values and sums;
   * `count` more than one when a process counted several alike (DNS's answering processes), 0 for sums alone.
   */
  record(dataset: string, scope: string, accountId: string, atMs: number, dims: readonly string[], sums: readonly number[], count?: number): void;
  query(q: RollupQuery): Promise<RollupGroupRow[]>;
  /** How far back rollups are kept (--analytics-retention-days), in seconds. */
  readonly retentionSeconds: number;
}

/**
 * A dataset's refusal of a query (a bad limit, filter or order), answered to the caller in its own words. Datasets
 * throw this rather than graphql-js's GraphQLError so that graphql-js is loaded by the first query (schema.ts), not
 * by every start that registers a dataset.
 */
export class DatasetRefusal extends Error {}
