import type { CliContext } from "../../core/cli/context.js";
import { readSecretInput } from "../../core/cli/secret-input.js";
import type { ProviderKey } from "../keys/store.js";
import { gatewayPath, type Args } from "./gateway.js";

const keysPath = async (ctx: CliContext, gateway: unknown) => `${await gatewayPath(ctx, gateway)}/provider_configs`;
const keyPath = async (ctx: CliContext, gateway: unknown, id: unknown) => `${await keysPath(ctx, gateway)}/${encodeURIComponent(String(id))}`;
const line = (k: ProviderKey) => `${k.id}  ${k.provider_slug.padEnd(16)}  ${k.alias}${k.default_config ? "  (default)" : ""}  modified ${k.modified_at}\n`;

/** `edgecli ai-gateway key add <gateway> <provider>`: the key comes from a hidden prompt or stdin, never an argument. */
export async function addKey(args: Args, ctx: CliContext): Promise<void> {
  const path = await keysPath(ctx, args.gateway);
  const secret = await readSecretInput(ctx, `Enter the ${String(args.provider)} API key:`);
  const k = await ctx.api().fetchResult<ProviderKey>("POST", path, {
    json: { provider_slug: args.provider, alias: args.alias, default_config: Boolean(args.default), secret },
  });
  if (args.json) return ctx.json(k);
  ctx.log.info(`Stored ${k.provider_slug} key ${k.id} (alias ${k.alias}${k.default_config ? ", the provider's default" : ""}) on gateway ${k.gateway_id}.`);
  ctx.log.info(
    k.default_config
      ? "Requests with a gateway token and no provider key now use it."
      : `Requests with a gateway token and no provider key use it when they send gw-aig-byok-alias: ${k.alias}.`,
  );
}

export async function listKeys(args: Args, ctx: CliContext): Promise<void> {
  const keys = await ctx.api().fetchAllPages<ProviderKey>(await keysPath(ctx, args.gateway), {}, 100);
  if (args.json) return ctx.json(keys);
  if (!keys.length)
    return ctx.log.info(`No provider keys on ${String(args.gateway)}. Add one with \`edgecli ai-gateway key add ${String(args.gateway)} <provider>\`.`);
  for (const k of keys) ctx.write(line(k));
}

/** `edgecli ai-gateway key rotate <gateway> <key-id>`: replaces the stored key; requests use the new one from then on. */
export async function rotateKey(args: Args, ctx: CliContext): Promise<void> {
  const path = await keyPath(ctx, args.gateway, args.id);
  const secret = await readSecretInput(ctx, "Enter the new API key:");
  const k = await ctx.api().fetchResult<ProviderKey>("PUT", path, { json: { secret } });
  if (args.json) return ctx.json(k);
  ctx.log.info(`Replaced the ${k.provider_slug} key ${k.id} (alias ${k.alias}).`);
}

export async function deleteKey(args: Args, ctx: CliContext): Promise<void> {
  const k = await ctx.api().fetchResult<ProviderKey>("DELETE", await keyPath(ctx, args.gateway, args.id));
  ctx.log.info(`Deleted the ${k.provider_slug} key ${k.id} (alias ${k.alias}); requests without a provider key of their own no longer use it.`);
}
