import type { CliContext } from "./context.js";

/** The one signature of a command handler: the parsed arguments and the CLI context; returns the exit code (default 0). */
export type CommandHandler<A = never> = (args: A, ctx: CliContext) => Promise<number | void>;

/**
 * A handler that loads its module only when its command runs, so `edgecli` starts fast and a command loads only
 * what it needs (the --local paths never load fastify, undici or zod):
 *
 *   handler: lazy(() => import("./cli/namespace.js"), "createNamespace"),
 *
 * `exportName` must name a handler (args, ctx) of that module; the import path stays a literal, so the CLI bundle
 * (scripts/bundle-cli.mjs) still sees the module.
 */
export function lazy<K extends string, M extends Record<K, CommandHandler>>(load: () => Promise<M>, exportName: K): M[K] {
  const handler = async (args: unknown, ctx: CliContext) => {
    const loaded: CommandHandler = (await load())[exportName];
    // The command's parser made `args` from the same spec the handler's parameter type describes.
    return loaded(args as never, ctx);
  };
  return handler as unknown as M[K];
}
