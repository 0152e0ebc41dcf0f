import type { CliContext } from "./context.js";

/**
 * A secret typed at a hidden prompt, or piped on stdin (trailing whitespace dropped): never a command-line argument,
 * which would stay in the shell's history and show in the process list.
 */
export async function readSecretInput(ctx: CliContext, prompt = "Enter a secret value:"): Promise<string> {
  if (ctx.io.stdin.isTTY) return ctx.promptHidden(prompt);
  return (await ctx.readStdin()).toString("utf8").replace(/\s+$/, "");
}
