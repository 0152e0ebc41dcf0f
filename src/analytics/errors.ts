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
  tooManyValues: (limit: number) =>
    `this query's answer would hold more than ${limit} values (rows times the fields each row selects, aliases and fragments counted); select fewer fields or ask fewer rows`,
  tooManyIntrospectionFields: (limit: number) => `this query asks __schema or __type more than ${limit} times; one asks the whole schema`,
  datasetFailed: (dataset: string) => `${dataset} could not be read (the platform's log has the reason); try again`,
};
