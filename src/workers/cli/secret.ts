import { ApiRequestError } from "../../core/cli/api-client.js";
import type { CliContext } from "../../core/cli/context.js";
import { readSecretInput } from "../../core/cli/secret-input.js";
import { bindingNameProblem } from "../../core/cli/config-file.js";
import { UserError } from "../../core/errors.js";
import { WorkersCodes } from "../errors.js";
import { resolveScriptName, scriptPath, uploadForm } from "./target.js";

interface Target {
  name?: string;
  env?: string;
}

/** The placeholder a secret is attached to when the Worker does not exist yet (as wrangler does); `deploy` replaces it. */
const DRAFT_MODULE = `export default { fetch() { return new Response("This Worker has not been deployed yet.\\n", { status: 503 }); } };\n`;

/** `edgecli secret put KEY`: creates the Worker as a draft first when it does not exist (after asking), as wrangler does. */
export async function putSecret(args: Target & { key?: string }, ctx: CliContext): Promise<void> {
  const key = args.key!;
  const problem = bindingNameProblem(key);
  if (problem) throw new UserError(`"${key}" ${problem}, so it cannot be a binding name`);
  const script = await resolveScriptName(ctx, args);
  const accountId = await ctx.accountId(args.env);
  const api = ctx.api();
  const text = await readSecretInput(ctx);
  ctx.log.info(`🌀 Creating the secret for the Worker "${script}"`);
  const put = () => api.fetchResult("PUT", `${scriptPath(accountId, script)}/secrets`, { json: { name: key, text, type: "secret_text" } });
  try {
    await put();
  } catch (e) {
    if (!(e instanceof ApiRequestError && e.hasCode(WorkersCodes.scriptNotFound))) throw e;
    const create = await ctx.confirm(
      `There doesn't seem to be a Worker called "${script}". Do you want to create a new Worker with that name and add secrets to it?`,
    );
    if (!create) return;
    ctx.log.info(`🌀 Creating new Worker "${script}"...`);
    const form = new FormData();
    form.append("metadata", JSON.stringify({ main_module: `${script}.mjs`, bindings: [] }));
    form.append(`${script}.mjs`, new Blob([DRAFT_MODULE], { type: "application/javascript+module" }), `${script}.mjs`);
    await uploadForm(ctx, scriptPath(accountId, script), form);
    await put();
  }
  ctx.log.info(`✨ Success! Uploaded secret ${key}`);
}

export async function listSecrets(args: Target & { format?: string }, ctx: CliContext): Promise<void> {
  const script = await resolveScriptName(ctx, args);
  const accountId = await ctx.accountId(args.env);
  const secrets = await ctx.api().fetchResult<{ name: string; type: string }[]>("GET", `${scriptPath(accountId, script)}/secrets`);
  if (args.format === "pretty") for (const s of secrets) ctx.write(`Secret Name: ${s.name}\n`);
  else ctx.json(secrets);
}

export async function deleteSecret(args: Target & { key?: string; force?: boolean }, ctx: CliContext): Promise<number | void> {
  const key = args.key!;
  const script = await resolveScriptName(ctx, args);
  const accountId = await ctx.accountId(args.env);
  const question = `Are you sure you want to permanently delete the secret ${key} on the Worker ${script}?`;
  if (!(await ctx.confirmDestructive(question, { given: args.force, flag: "--force (-y)" }))) return;
  ctx.log.info(`🌀 Deleting the secret ${key} on the Worker ${script}`);
  await ctx.api().fetchResult("DELETE", `${scriptPath(accountId, script)}/secrets/${encodeURIComponent(key)}`, { query: { url_encoded: "true" } });
  ctx.log.info(`✨ Success! Deleted secret ${key}`);
}
