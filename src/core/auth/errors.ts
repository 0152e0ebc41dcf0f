import { Codes, EdgeError } from "../errors.js";
import { PERMISSION_GROUPS, type Permission } from "./permissions.js";

/** Prefix of an account resource in a token policy (`com.cloudflare.api.account.<id>`). */
export const ACCOUNT_RESOURCE = "com.cloudflare.api.account.";

/** The codes identity and token routes answer with, as the hosted API does. */
export const IdentityCodes = {
  /** An API token that is not valid, or a verify call made without one. */
  invalidToken: 1000,
  /** A grant the caller does not hold itself ("Failed common permission check against resources"). */
  beyondCaller: 1001,
  /** An unknown token, or one outside the caller's accounts (the same answer, so ids cannot be probed). */
  tokenNotFound: 1003,
  /** The message code of a successful token verification. */
  tokenValid: 10000,
  validation: Codes.validation,
  authentication: Codes.authentication,
} as const;

const groupName = (p: Permission) => PERMISSION_GROUPS.find((g) => g.id === p)?.name ?? p;

/** Identity's refusals; every message is written here once. */
export const IdentityErrors = {
  createAccountNeedsGlobalKey: () => new EdgeError(403, IdentityCodes.authentication, "Creating an account needs the global API key"),
  verifyNeedsToken: () => new EdgeError(400, IdentityCodes.invalidToken, "Invalid API Token: verify takes an API token in the Authorization header"),
  invalidToken: () => new EdgeError(401, IdentityCodes.invalidToken, "Invalid API Token"),
  tokenNotFound: () => new EdgeError(404, IdentityCodes.tokenNotFound, "Token not found"),
  beyondCaller: (p: Permission, account: string) =>
    new EdgeError(
      400,
      IdentityCodes.beyondCaller,
      `Failed common permission check against resources. (Permission group: "${groupName(p)}", resource: ${ACCOUNT_RESOURCE}${account}): a token can only grant what its creator holds`,
    ),
  unknownPermission: (name: string) =>
    new EdgeError(400, IdentityCodes.validation, `Unknown permission group "${name}". See GET /user/tokens/permission_groups`),
  unsupportedResource: (resource: string) =>
    new EdgeError(400, IdentityCodes.validation, `Unsupported resource "${resource}": use ${ACCOUNT_RESOURCE}<account id> or ${ACCOUNT_RESOURCE}*`),
  malformedAccountResource: (resource: string) =>
    new EdgeError(400, IdentityCodes.validation, `Unsupported resource "${resource}": an account id is 32 hex characters`),
  otherAccount: (fixedAccount: string) => new EdgeError(400, IdentityCodes.validation, `An account token can only reach account ${fixedAccount}`),
  noPermission: () =>
    new EdgeError(400, IdentityCodes.validation, "policies: a token needs at least one permission (policies or permissions)", { pointer: "/policies" }),
};
