/** The codes of the analytics API: a body that is not a GraphQL request is a v4 refusal; a query's own faults are GraphQL errors. */
export const AnalyticsCodes = {
  /** The hosted v4 validation code, for a body that is not a GraphQL request. */
  invalidRequest: 10021,
} as const;

/** The messages of the GraphQL errors a query is answered with. */
export const AnalyticsMessages = {
  accountNotAuthorized: (account: string) => `not authorized for account ${account}: it does not exist or the caller has no access to it`,
  datasetNotAuthorized: (dataset: string, permission: string) => `not authorized to read ${dataset}: the caller needs ${permission} on this account`,
  accountTagRequired: () => "accounts: filter.accountTag is required (one account per query)",
  zoneNotAuthorized: (zone: string) => `not authorized for zone ${zone}: it does not exist or the caller has no access to it`,
  zoneTagRequired: () => "zones: filter.zoneTag is required (one zone per query)",
  tooManyDatasetReads: (limit: number) => `this query reads datasets more than ${limit} times; split it`,
  tooManyRows: (limit: number) => `this query answers more than ${limit} rows (groups) in all, over its datasets; split it or ask fewer`,
  tooManyValues: (limit: number) =>
    `this query's answer would hold more than ${limit} values (rows times the fields each row selects, aliases and fragments counted); select fewer fields or ask fewer rows`,
  tooManySameFields: (key: string, limit: number) =>
    `this query names the field ${key} more than ${limit} times at one place of its answer (fragments and repeated parents counted); name it once`,
  tooManySelections: (limit: number) => `this query's selections, fragments expanded, are more than ${limit}; ask less in one query`,
  tooManyIntrospectionFields: (limit: number) => `this query asks __schema or __type more than ${limit} times; one asks the whole schema`,
  datasetFailed: (dataset: string) => `${dataset} could not be read (the platform's log has the reason); try again`,
};
