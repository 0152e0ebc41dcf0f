import { UserError } from "../../core/errors.js";
import type { CliContext } from "../../core/cli/context.js";
import { s3SecretOf } from "../s3/credentials.js";

interface Membership {
  account: { id: string; name: string };
  permissions: Record<string, unknown>;
}

/**
 * `edgecli r2 credentials`: the S3 endpoint and key pair of the current API token, derived as R2 does (access key
 * id = the token's id, secret access key = SHA-256 hex of the token's value), with the accounts it reaches.
 */
export async function printCredentials(args: { json?: boolean }, ctx: CliContext): Promise<void> {
  const api = ctx.api();
  const value = /^Bearer\s+(\S+)$/i.exec(api.target.headers.authorization ?? "")?.[1];
  if (!value) {
    throw new UserError(
      "S3 credentials are derived from an API token, and these credentials are a global API key: set EDGE_API_TOKEN to a token with R2 permission (create one with POST /user/tokens).",
    );
  }
  const token = await api.fetchResult<{ id: string; status: string }>("GET", "/user/tokens/verify");
  const memberships = await api.fetchAllPages<Membership>("/memberships", {}, 50);
  const accounts = memberships
    .filter((m) => "r2_read" in m.permissions || "r2_edit" in m.permissions)
    .map((m) => ({ id: m.account.id, name: m.account.name, permission: "r2_edit" in m.permissions ? "r2_edit" : "r2_read" }));
  if (accounts.length === 0) {
    throw new UserError(`API token ${token.id} has no R2 permission on any account: S3 requests signed with it are refused (AccessDenied).`);
  }
  const view = {
    endpoint: api.target.baseUrl.replace(/\/client\/v4$/, ""),
    access_key_id: token.id,
    secret_access_key: s3SecretOf(value),
    region: "auto",
    accounts,
  };
  if (args.json) return ctx.json(view);
  ctx.log.info(
    [
      `endpoint:          ${view.endpoint}`,
      `access_key_id:     ${view.access_key_id}`,
      `secret_access_key: ${view.secret_access_key}`,
      `region:            ${view.region}`,
      ...accounts.map((a) => `account:           ${a.id} (${a.name}, ${a.permission})`),
    ].join("\n"),
  );
  if (accounts.length > 1) {
    ctx.log.info(
      `\nThis token reaches ${accounts.length} accounts with R2: name one in the host, e.g. http://${accounts[0].id}.r2.localhost:<port> (edgecli serve --s3-host sets the name under which accounts and buckets are addressed).`,
    );
  }
}
