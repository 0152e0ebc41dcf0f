import type { OptionSpec } from "../core/cli/command.js";

/**
 * R2's part of `edgecli serve`: it adds no options yet. An option declared here (with its default) is read by the
 * service as `ctx.options(serveOptions)`, typed by this spec.
 */
export const serveOptions = {} satisfies Record<string, OptionSpec>;
