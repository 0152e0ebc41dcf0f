import { UsageError, UserError } from "../../core/errors.js";
import type { CliContext } from "../../core/cli/context.js";

export interface SelectorArgs {
  binding?: string;
  "namespace-id"?: string;
  env?: string;
  preview?: boolean;
  readonly given: ReadonlySet<string>;
}

export interface NamespaceTarget {
  id: string;
  /** How messages name it, e.g. `binding "MY_KV" (id: "…")`. */
  display: string;
}

/**
 * Picks the namespace a command acts on: --namespace-id as given, or --binding looked up in the config
 * (in [env.<name>] with --env; preview_id with --preview). `readDefaultsToProduction` is for get/list,
 * which read the production namespace unless --preview is given, as wrangler 3 does.
 */
export async function resolveNamespace(args: SelectorArgs, ctx: CliContext, readDefaultsToProduction = false): Promise<NamespaceTarget> {
  const byId = args["namespace-id"];
  const binding = args.binding;
  if (byId !== undefined && binding !== undefined)
    throw new UsageError("Arguments binding and namespace-id are mutually exclusive: give exactly one of --binding and --namespace-id");
  if (byId === undefined && binding === undefined) throw new UsageError("Exactly one of the arguments binding and namespace-id is required");
  if (byId !== undefined) {
    if (!byId.trim()) throw new UsageError("--namespace-id must not be empty");
    return { id: byId, display: `id: "${byId}"` };
  }
  const cfg = await ctx.config(args.env);
  if (!cfg)
    throw new UserError(
      "Failed to find a config file (edge.toml or wrangler.toml).\nEither use --namespace-id to name the namespace directly or create a configuration file with a binding.",
    );
  const where = args.env ? `[env.${args.env}] of ${cfg.path}` : cfg.path;
  if (cfg.kv_namespaces.length === 0) {
    throw new UserError(`No KV namespaces are configured in ${where}. Either use --namespace-id or add a [[kv_namespaces]] entry to the config file.`);
  }
  const entry = cfg.kv_namespaces.find((n) => n.binding === binding);
  if (!entry) {
    const known = cfg.kv_namespaces.map((n) => n.binding).join(", ");
    throw new UserError(`A namespace with binding name "${binding}" was not found in the configured "kv_namespaces" of ${where} (configured: ${known}).`);
  }
  const display = (id: string) => `binding: "${binding}" (id: "${id}")`;
  const wantPreview = args.given.has("preview") ? Boolean(args.preview) : readDefaultsToProduction ? false : undefined;
  if (wantPreview === true) {
    if (!entry.preview_id)
      throw new UserError(
        `No preview ID found for ${binding}. Add preview_id to its kv_namespaces entry in ${where} to use a separate namespace for previews.`,
      );
    return { id: entry.preview_id, display: display(entry.preview_id) };
  }
  if (wantPreview === false) {
    if (!entry.id)
      throw new UserError(`No namespace ID found for ${binding}. Add id to its kv_namespaces entry in ${where}, or pass --preview to use its preview_id.`);
    return { id: entry.id, display: display(entry.id) };
  }
  if (entry.id && entry.preview_id) {
    throw new UserError(
      `${binding} has both a namespace ID and a preview ID. Specify "--preview" or "--preview false" to avoid writing data to the wrong namespace.`,
    );
  }
  const id = (entry.id ?? entry.preview_id)!;
  if (!id) throw new UserError(`The binding ${binding} in ${where} has neither id nor preview_id.`);
  return { id, display: display(id) };
}
