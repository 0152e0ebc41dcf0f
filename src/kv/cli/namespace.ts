import type { CliContext } from "../../core/cli/context.js";
import { UserError } from "../../core/errors.js";
import type { KvNamespace } from "../store.js";
import { resolveNamespace, type SelectorArgs } from "./target.js";

const nsPath = (accountId: string) => `/accounts/${encodeURIComponent(accountId)}/storage/kv/namespaces`;

/** A valid binding name from a namespace argument: `my-ns` → `my_ns`, as wrangler derives it. */
function bindingNameOf(arg: string): string {
  const name = arg
    .replace(/[\s-]/g, "_")
    .replace(/[^A-Za-z0-9_]/g, "")
    .replace(/_+/g, "_");
  if (!name) return "KV";
  return /^\d/.test(name) ? `_${name}` : name;
}

export async function createNamespace(args: { namespace?: string; env?: string; preview?: boolean }, ctx: CliContext): Promise<void> {
  const arg = args.namespace!;
  if (!arg.trim()) throw new UserError("The namespace name must not be empty");
  const cfg = await ctx.config(args.env);
  let name = cfg?.project_name;
  if (!name) {
    ctx.log.warn("No configured name present, using `worker` as a prefix for the title");
    name = "worker";
  }
  const title = `${name}${args.env ? `-${args.env}` : ""}-${arg}${args.preview ? "_preview" : ""}`;
  const account = await ctx.accountId(args.env);
  ctx.log.info(`🌀 Creating namespace with title "${title}"`);
  const ns = await ctx.api().fetchResult<KvNamespace>("POST", nsPath(account), { json: { title } });
  const table = args.env ? `env.${args.env}.kv_namespaces` : "kv_namespaces";
  ctx.log.info("✨ Success!");
  ctx.log.info(`Add the following to your configuration file in your kv_namespaces array${args.env ? ` under [env.${args.env}]` : ""}:`);
  ctx.log.info(`[[${table}]]\nbinding = "${bindingNameOf(arg)}"\n${args.preview ? "preview_id" : "id"} = "${ns.id}"`);
}

export async function listNamespaces(_args: unknown, ctx: CliContext): Promise<void> {
  const account = await ctx.accountId();
  const all = await ctx.api().fetchAllPages<KvNamespace>(nsPath(account), { order: "title", direction: "asc" }, 100);
  ctx.json(all.map((n) => ({ id: n.id, title: n.title })));
}

export async function deleteNamespace(args: SelectorArgs & { "skip-confirmation"?: boolean }, ctx: CliContext): Promise<number> {
  const target = await resolveNamespace(args, ctx);
  const account = await ctx.accountId(args.env);
  const question = `Are you sure you want to delete the KV namespace ${target.display} and every key in it?`;
  if (!(await ctx.confirmDestructive(question, { given: args["skip-confirmation"], flag: "--skip-confirmation (-y)" }))) {
    ctx.log.info("Not deleting.");
    return 0;
  }
  ctx.log.info(`Deleting KV namespace ${target.display}.`);
  await ctx.api().fetchResult("DELETE", `${nsPath(account)}/${encodeURIComponent(target.id)}`);
  ctx.log.info(`Deleted KV namespace ${target.display}.`);
  return 0;
}
