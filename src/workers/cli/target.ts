import { UserError } from "../../core/errors.js";
import type { ApiEnvelope } from "../../core/cli/api-client.js";
import type { CliContext } from "../../core/cli/context.js";

/**
 * The Worker a command acts on, as wrangler picks it: `--name` (with `--env E`, `<name>-E`), else the
 * config's name for the selected environment.
 */
export async function resolveScriptName(ctx: CliContext, args: { name?: string; env?: string }): Promise<string> {
  if (args.name) return args.env ? `${args.name}-${args.env}` : args.name;
  const cfg = await ctx.config(args.env);
  if (cfg?.name) return cfg.name;
  throw new UserError(
    `Required Worker name missing. Please specify the Worker name in your ${cfg ? cfg.path : "edge.toml"} file, or pass it as an argument with \`--name <worker-name>\``,
  );
}

export const scriptPath = (accountId: string, name: string) => `/accounts/${accountId}/workers/scripts/${encodeURIComponent(name)}`;

/** Sends a multipart form through the API client (undici's `request` takes bytes, not the global FormData). */
export async function uploadForm<T>(ctx: CliContext, path: string, form: FormData, query?: Record<string, string>): Promise<ApiEnvelope<T>> {
  const encoded = new Response(form);
  const body = Buffer.from(await encoded.arrayBuffer());
  return ctx.api().fetchEnvelope<T>("PUT", path, { body, query, headers: { "content-type": encoded.headers.get("content-type")! } });
}
