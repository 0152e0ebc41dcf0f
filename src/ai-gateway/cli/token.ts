import type { CliContext } from "../../core/cli/context.js";
import type { Gateway } from "../gateways/store.js";
import { gatewayPath, type Args } from "./gateway.js";

interface TokenView {
  id: string;
  name: string;
  status: string;
  issued_on: string;
  last_used_on: string | null;
  policies: { permission_groups: { id: string }[] }[];
  value?: string;
}

const tokensPath = async (ctx: CliContext) => `/accounts/${await ctx.accountId()}/tokens`;

export async function createToken(args: Args, ctx: CliContext): Promise<void> {
  const gateway = String(args.gateway);
  // The gateway must exist, so a typo does not mint a token for nothing.
  await ctx.api().fetchResult<Gateway>("GET", await gatewayPath(ctx, gateway));
  const t = await ctx.api().fetchResult<TokenView>("POST", await tokensPath(ctx), {
    json: { name: (args.name as string) ?? `ai-gateway-${gateway}`, permissions: ["ai_gateway_run"] },
  });
  if (args.json) return ctx.json({ id: t.id, name: t.name, value: t.value });
  ctx.log.info(`Created gateway token ${t.id} (${t.name}). Save the value now; it is not shown again:`);
  ctx.write(`${t.value}\n`);
  ctx.log.info(
    `Send it on every request as gw-aig-authorization: Bearer <token> (SDKs: default header gw-aig-token), then turn on authentication: edgecli ai-gateway update ${gateway} --authentication`,
  );
}

export async function listTokens(args: Args, ctx: CliContext): Promise<void> {
  const all = await ctx.api().fetchAllPages<TokenView>(await tokensPath(ctx), {}, 50);
  // Gateway tokens are the run-only tokens `token create` makes; broader tokens of the account (the bootstrap one) are not.
  const run = all.filter((t) => t.policies.every((p) => p.permission_groups.every((g) => g.id === "ai_gateway_run")));
  if (args.json) return ctx.json(run.map(({ id, name, status, issued_on, last_used_on }) => ({ id, name, status, issued_on, last_used_on })));
  if (!run.length) return ctx.log.info("No gateway tokens. Create one with `edgecli ai-gateway token create <gateway>`.");
  for (const t of run) ctx.write(`${t.id}  ${t.status.padEnd(8)}  ${t.name}  issued ${t.issued_on}  last used ${t.last_used_on ?? "never"}\n`);
}

export async function revokeToken(args: Args, ctx: CliContext): Promise<void> {
  await ctx.api().fetchResult("DELETE", `${await tokensPath(ctx)}/${encodeURIComponent(String(args.id))}`);
  ctx.log.info(`Revoked token ${args.id}; requests carrying it are refused from now on`);
}
