import type { CliContext } from "../../cli/context.js";

interface Verify {
  id: string;
  status: string;
}
interface Membership {
  account: { id: string; name: string };
  permissions: Record<string, unknown>;
}

/** `edgecli whoami`: the user, the accounts and the permissions of the current credentials. */
export async function whoami(args: { json?: boolean }, ctx: CliContext): Promise<void> {
  const api = ctx.api();
  const user = await api.fetchResult<{ id: string; email: string }>("GET", "/user");
  const memberships = await api.fetchAllPages<Membership>("/memberships", {}, 50);
  const token = api.target.headers.authorization ? await api.fetchResult<Verify>("GET", "/user/tokens/verify") : undefined;
  const view = {
    email: user.email,
    user_id: user.id,
    api: api.target.baseUrl,
    credentials: token ? `API token ${token.id} (${token.status})` : "global API key",
    accounts: memberships.map((m) => ({ id: m.account.id, name: m.account.name, permissions: Object.keys(m.permissions).sort() })),
  };
  if (args.json) return ctx.json(view);
  ctx.log.info(`You are logged in as ${view.email} (${view.credentials}) at ${view.api}.`);
  for (const a of view.accounts) {
    ctx.log.info(`\nAccount ${a.name} (${a.id})`);
    ctx.log.info(`  permissions: ${a.permissions.join(", ") || "none"}`);
  }
}
