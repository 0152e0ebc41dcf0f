import { EdgeError } from "../core/errors.js";

/** Error codes of the AI gateway, as the hosted gateway and its API use them. */
export const AigCodes = {
  validation: 7001,
  notFound: 7002,
  badPath: 7003,
  rateLimited: 2003,
  unauthorized: 2009,
  upstreamUnreachable: 2005,
  upstreamTimeout: 2006,
  /** A proxied request body over the platform's body limit (the code the gateway has always answered with). */
  bodyTooLarge: 10013,
} as const;

const invalid = (message: string, pointer?: string) => new EdgeError(400, AigCodes.validation, message, { pointer });
const badPath = (status: number, message: string) => new EdgeError(status, AigCodes.badPath, message);

/** The AI gateway's refusals, on the v4 API and on the proxy (/v1); every message is written here once. */
export const AigErrors = {
  // Gateways (v4 API)
  gatewayNotFound: (id: string) => new EdgeError(404, AigCodes.notFound, `Not Found: no gateway "${id}" in this account`),
  gatewayExists: (id: string) => new EdgeError(409, AigCodes.validation, `id: a gateway "${id}" already exists`, { pointer: "/id" }),
  gatewayIdChanged: () => invalid("id: a gateway's id cannot change", "/id"),

  // Provider keys (v4 API)
  providerKeyNotFound: (id: string, gatewayId: string) => new EdgeError(404, AigCodes.notFound, `Not Found: no provider key "${id}" in gateway "${gatewayId}"`),
  providerKeyExists: (provider: string, alias: string) =>
    new EdgeError(409, AigCodes.validation, `alias: the gateway already has a ${provider} key with the alias "${alias}"`, { pointer: "/alias" }),
  unknownKeyProvider: (slug: string, known: readonly string[]) =>
    invalid(`provider_slug: unknown provider "${slug}" (known: ${known.join(", ")})`, "/provider_slug"),
  tooManyProviderKeys: (limit: number) => invalid(`a gateway holds at most ${limit} provider keys; delete one first`),
  /** A key the request names with gw-aig-byok-alias (or cf-aig-byok-alias) that the gateway does not have. */
  unknownKeyAlias: (provider: string, alias: string) => invalid(`gw-aig-byok-alias: the gateway has no stored ${provider} key with the alias "${alias}"`),

  // Logs (v4 API)
  logNotFound: (logId: string, gatewayId: string) => new EdgeError(404, AigCodes.notFound, `Not Found: no log "${logId}" in gateway "${gatewayId}"`),
  logBodyNotStored: (which: "request" | "response", logId: string) =>
    new EdgeError(404, AigCodes.notFound, `Not Found: the ${which} body of log "${logId}" was not stored`),
  filtersNotJson: (detail: string) => invalid(`filters: must be a JSON array of {key, operator, value[]} (${detail})`, "filters"),
  notBoolean: (name: string) => invalid(`${name}: must be true or false`, name),
  notDateTime: (name: string) => invalid(`${name}: must be a date-time`, name),
  notNumber: (name: string) => invalid(`${name}: must be a number`, name),
  orderBy: (keys: readonly string[]) => invalid(`order_by: must be one of ${keys.join(", ")}`, "order_by"),
  orderDirection: () => invalid("order_by_direction: must be asc or desc", "order_by_direction"),
  deleteLimit: () => invalid(`limit: must be a positive integer no larger than ${Number.MAX_SAFE_INTEGER}`, "limit"),

  // The proxy (/v1)
  unauthorized: () =>
    new EdgeError(401, AigCodes.unauthorized, "Unauthorized", {
      extra: { error: [{ code: AigCodes.unauthorized, message: "Unauthorized" }], name: "AiGatewayError", httpCode: 401, internalCode: AigCodes.unauthorized },
    }),
  rateLimited: () => new EdgeError(429, AigCodes.rateLimited, "Rate limited"),
  accountNotFound: (accountId: string) => new EdgeError(404, AigCodes.notFound, `Not Found: no account "${accountId}"`),
  gatewayNotInAccount: (gatewayId: string, accountId: string) =>
    new EdgeError(404, AigCodes.notFound, `Not Found: no gateway "${gatewayId}" in account ${accountId}`),
  malformedPath: () => badPath(400, "The URL path is not valid percent-encoded UTF-8"),
  pathShape: () => badPath(404, "Expected /v1/{account_id}/{gateway_id}/{provider}/..."),
  unknownProviderSegment: (segment: string, known: readonly string[]) =>
    badPath(400, `Unknown provider "${segment}". Known providers: ${known.join(", ")}, and the endpoints compat and universal`),
  /** A client path the provider cannot take (`why` says what is wrong with it). */
  providerPath: (why: string) => badPath(400, why),
  universalMethod: () => badPath(405, "The universal endpoint takes POST"),
  compatMethod: () => badPath(405, "The compat endpoint takes POST"),
  compatEndpoint: () => badPath(404, "The compat endpoint serves chat/completions"),
  compatModel: () => invalid('model: must be "<provider>/<model>", e.g. "openai/gpt-4o-mini"', "/model"),
  compatUnknownProvider: (provider: string) => invalid(`model: unknown provider "${provider}"`, "/model"),
  compatNoChat: (provider: string) => invalid(`model: ${provider} has no OpenAI-compatible chat endpoint; call it under /${provider}/ instead`, "/model"),
  stepUnknownProvider: (provider: string) => invalid(`provider: unknown provider "${provider}"`),
  stepEndpoint: (why: string) => invalid(`endpoint: ${why}`),
  stepHeaderName: (name: string) =>
    invalid(`headers: ${JSON.stringify(name)} is not a valid header name (an HTTP token: letters, digits and !#$%&'*+-.^_\`|~)`),
  stepHeaderValue: (name: string) =>
    invalid(`headers: ${JSON.stringify(name)} has a header value HTTP cannot carry (CR, LF, NUL or another control character, or a character beyond U+00FF)`),
  noStepServed: () => new EdgeError(502, AigCodes.upstreamUnreachable, "No step of the request could be served"),
  /** A malformed gateway header (`gw-aig-<name>`, or its `cf-aig-` alias). */
  badHeader: (name: string, rule: string) => invalid(`gw-aig-${name}: ${rule}`),
  bodyTooLarge: (limit: number) => new EdgeError(413, AigCodes.bodyTooLarge, `Request body is larger than ${limit} bytes`),
  clientGone: () => new EdgeError(499, AigCodes.upstreamUnreachable, "The client went away"),
  upstreamTimeout: (origin: string) => new EdgeError(504, AigCodes.upstreamTimeout, `The provider at ${origin} did not answer within the request timeout`),
  upstreamUnreachable: (origin: string, why: string) => new EdgeError(502, AigCodes.upstreamUnreachable, `Could not reach the provider at ${origin} (${why})`),
};
