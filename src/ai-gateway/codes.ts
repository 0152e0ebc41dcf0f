/** Error codes of the AI gateway, as the hosted gateway and its API use them. */
export const AigCodes = {
  validation: 7001,
  notFound: 7002,
  badPath: 7003,
  rateLimited: 2003,
  unauthorized: 2009,
  upstreamUnreachable: 2005,
  upstreamTimeout: 2006,
} as const;
