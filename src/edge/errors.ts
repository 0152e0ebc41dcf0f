import { Codes, EdgeError } from "../core/errors.js";

/**
 * The edge's codes. The error pages' number is the hosted platform's (1001: a hostname it serves nothing for).
 * `platformHostname` is the hosted API's code for a zone name it will not take (DNS answers it for public suffixes
 * too); records, Custom Domains and routes at a platform hostname get it as well (ours: hosted has no
 * operator-reserved names).
 */
export const EdgeCodes = {
  platformHostname: 1099,
  unknownHost: 1001,
  validation: Codes.validation,
  // Zone settings: the hosted API's 1001 for an unknown zone, 1006 for a setting name it does not have, 1007 for a
  // value a setting does not take.
  zoneNotFound: 1001,
  unknownSetting: 1006,
  invalidSettingValue: 1007,
  // Purge (the hosted purge_cache codes): 1012 nothing (or more than one kind) to purge, 1013 purge_everything not
  // true, 1014 a list that is not a list of strings, 1015 more items than one request may name.
  purgeNothing: 1012,
  purgeEverythingNotTrue: 1013,
  purgeNotAList: 1014,
  purgeTooMany: 1015,
  // A purge over the account's rate limit: the code and words of the hosted API's 429 answers.
  purgeRateLimited: 1134,
  // Certificates (ours: the hosted API's codes for these are not documented): a refused upload, an unknown id.
  invalidCertificate: 1210,
  certificateNotFound: 1404,
} as const;

import type { TenantNameUse } from "../core/service.js";

/** What a tenant tried to put at or under a platform hostname. */
export type ReservedUse = TenantNameUse;

/** Where a refused name sits against the platform hostname it collides with. */
export type Collision = "at" | "under" | "above";

const POINTERS: Record<ReservedUse, string> = {
  zone: "/name",
  "DNS record": "/name",
  "Custom Domain": "/hostname",
  route: "/pattern",
  "custom certificate": "/certificate",
};

/** The edge's refusals; every message is written here once. */
export const EdgeErrors = {
  platformHostname: (use: ReservedUse, name: string, collision: Collision, reserved: string, role: string) =>
    new EdgeError(
      400,
      EdgeCodes.platformHostname,
      `${name} cannot be used for a ${use}: it is ${collision === "at" ? "" : `${collision} `}${reserved}, the platform's own ${role} hostname; nothing of an account may sit at or under a platform hostname`,
      { pointer: POINTERS[use] },
    ),
  zoneNotFound: () => new EdgeError(404, EdgeCodes.zoneNotFound, "Invalid zone identifier"),
  unknownSetting: (name: string) => new EdgeError(400, EdgeCodes.unknownSetting, `Unrecognized zone setting name: ${name.slice(0, 100)}`),
  invalidValue: (name: string, why: string) =>
    new EdgeError(400, EdgeCodes.invalidSettingValue, `Invalid value for zone setting ${name}: ${why}`, { pointer: "/value" }),
  invalidBody: (why: string) => new EdgeError(400, EdgeCodes.validation, why),
  purgeNothing: () =>
    new EdgeError(400, EdgeCodes.purgeNothing, 'Request must contain exactly one of "purge_everything", "files", "tags", "hosts" or "prefixes"'),
  purgeEverythingNotTrue: () => new EdgeError(400, EdgeCodes.purgeEverythingNotTrue, '"purge_everything" must be true'),
  purgeNotAList: (field: string) => new EdgeError(400, EdgeCodes.purgeNotAList, `"${field}" must be an array of strings`, { pointer: `/${field}` }),
  purgeTooMany: (field: string, max: number) =>
    new EdgeError(400, EdgeCodes.purgeTooMany, `You may only purge up to ${max} ${field} per request`, { pointer: `/${field}` }),
  purgeRateLimited: () =>
    new EdgeError(429, EdgeCodes.purgeRateLimited, "Unable to purge, rate limit reached. Please wait and consider throttling your request speed"),
  purgeBadItem: (field: string, index: number, why: string) =>
    new EdgeError(400, EdgeCodes.validation, `${field}[${index}]: ${why}`, { pointer: `/${field}/${index}` }),
  invalidCertificate: (why: string, pointer = "/certificate") => new EdgeError(400, EdgeCodes.invalidCertificate, why, { pointer }),
  certificateNotFound: () => new EdgeError(404, EdgeCodes.certificateNotFound, "Certificate not found"),
  tooManyCertificates: (max: number) =>
    new EdgeError(400, EdgeCodes.invalidCertificate, `A zone can have at most ${max} custom certificates; delete one before uploading another`),
};
