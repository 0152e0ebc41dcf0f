import type { CliContext } from "../../core/cli/context.js";
import { EdgeError, UsageError, UserError } from "../../core/errors.js";
import { toCliMessage } from "../../core/errors/render.js";
import type { KvBulkEntry, KvKeyInfo, KvPutOptions } from "../store.js";
import { resolveNamespace, type NamespaceTarget, type SelectorArgs } from "./target.js";

/** What the key and bulk commands need from a namespace, whether it lives behind the API or in local files. */
export interface KvCliBackend {
  /** "local" or "remote", for messages. */
  readonly where: string;
  put(key: string, value: Buffer, opts: KvPutOptions): Promise<void>;
  get(key: string): Promise<Buffer | null>;
  /** Every key (all pages) with the prefix. */
  list(prefix?: string): Promise<KvKeyInfo[]>;
  delete(key: string): Promise<void>;
  /** Entries are already validated; written in batches, reporting how many are done. */
  putMany(entries: readonly KvBulkEntry[], progress: (done: number) => void): Promise<void>;
  deleteMany(keys: readonly string[], progress: (done: number) => void): Promise<void>;
  close(): void;
}

export interface BackendArgs {
  local?: boolean;
  "persist-to"?: string;
  env?: string;
  readonly given: ReadonlySet<string>;
}

/**
 * Resolves the namespace and opens the right backend: the state directory for --local (only the SQLite
 * code is loaded then, for a fast start), the API otherwise.
 */
export async function openBackend(
  args: SelectorArgs & BackendArgs,
  ctx: CliContext,
  readDefaultsToProduction = false,
): Promise<{ target: NamespaceTarget; backend: KvCliBackend }> {
  if (args["persist-to"] !== undefined && !args.local) throw new UsageError("--persist-to only applies together with --local");
  const target = await resolveNamespace(args, ctx, readDefaultsToProduction);
  if (args.local) {
    const { LocalKvBackend } = await import("./local-backend.js");
    const cfgAccount = args.binding !== undefined ? (await ctx.config(args.env))?.account_id : undefined;
    return { target, backend: LocalKvBackend.open(args["persist-to"], target.id, ctx.env, ctx.cwd, cfgAccount) };
  }
  const { RemoteKvBackend } = await import("./remote-backend.js");
  return { target, backend: new RemoteKvBackend(ctx.api(), await ctx.accountId(args.env), target.id) };
}

/** Store errors (local mode) become one clear CLI line carrying the same code the API would send. */
export async function userErrors<T>(op: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof EdgeError) throw new UserError(`KV ${op} failed: ${e.status} ${toCliMessage(e)}`);
    throw e;
  }
}
