import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import type { CliContext } from "../../core/cli/context.js";
import { UsageError, UserError } from "../../core/errors.js";
import type { KvKeyInfo } from "../store.js";
import { checkKey, prepareEntry } from "../validation.js";
import { openBackend, userErrors, type BackendArgs } from "./backend.js";
import type { SelectorArgs } from "./target.js";

type KeyArgs = SelectorArgs & BackendArgs & { key?: string };

export async function putKey(
  args: KeyArgs & { value?: string; path?: string; ttl?: number; expiration?: number; metadata?: string },
  ctx: CliContext,
): Promise<void> {
  const key = args.key!;
  if ((args.value === undefined) === (args.path === undefined)) throw new UsageError("Exactly one of the arguments value and path is required");
  const metadata = args.metadata === undefined ? undefined : parseMetadataFlag(args.metadata);
  const value = args.path !== undefined ? readValueFile(args.path, ctx.cwd) : Buffer.from(args.value!, "utf8");
  // --ttl wins over --expiration, as documented; validating here means nothing is sent or opened on a bad call.
  const opts = args.ttl !== undefined ? { expirationTtl: args.ttl, metadata } : { expiration: args.expiration, metadata };
  await userErrors("PUT", async () => prepareEntry(key, value, opts));
  const { target, backend } = await openBackend(args, ctx);
  try {
    const what = args.path !== undefined ? `the contents of ${args.path} to the key "${key}"` : `the value "${args.value}" to key "${key}"`;
    const withMeta = metadata !== undefined ? ` with metadata "${JSON.stringify(metadata)}"` : "";
    ctx.log.info(`Writing ${what} on namespace ${target.display}${withMeta}.`);
    await userErrors("PUT", () => backend.put(key, value, opts));
  } finally {
    backend.close();
  }
}

export async function getKey(args: KeyArgs & { text?: boolean }, ctx: CliContext): Promise<number> {
  const key = args.key!;
  await userErrors("GET", async () => checkKey(key));
  const { target, backend } = await openBackend(args, ctx, true);
  try {
    const value = await userErrors("GET", () => backend.get(key));
    if (value === null) throw new UserError(`Value not found: the key "${key}" does not exist in namespace ${target.display} (${backend.where}).`);
    // Bytes go out untouched unless --text asks for text.
    ctx.write(args.text ? `${value.toString("utf8")}\n` : value);
    return 0;
  } finally {
    backend.close();
  }
}

export async function listKeys(args: SelectorArgs & BackendArgs & { prefix?: string }, ctx: CliContext): Promise<void> {
  const { backend } = await openBackend(args, ctx, true);
  try {
    const keys = await userErrors("LIST", () => backend.list(args.prefix));
    ctx.json(keys.map(displayKey));
  } finally {
    backend.close();
  }
}

export async function deleteKey(args: KeyArgs, ctx: CliContext): Promise<void> {
  const key = args.key!;
  await userErrors("DELETE", async () => checkKey(key));
  const { target, backend } = await openBackend(args, ctx);
  try {
    ctx.log.info(`Deleting the key "${key}" on namespace ${target.display}.`);
    await userErrors("DELETE", () => backend.delete(key));
  } finally {
    backend.close();
  }
}

/** A listing entry as the CLI prints it: expiration as an ISO 8601 timestamp, metadata when present. */
function displayKey(k: KvKeyInfo): Record<string, unknown> {
  const out: Record<string, unknown> = { name: k.name };
  if (k.expiration !== undefined) out.expiration = new Date(k.expiration * 1000).toISOString();
  if (k.metadata !== undefined && k.metadata !== null) out.metadata = k.metadata;
  return out;
}

function parseMetadataFlag(raw: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new UsageError(`--metadata must be valid JSON. Received: ${raw}`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new UsageError(`--metadata must be a JSON object. Received: ${raw}`);
  return parsed as Record<string, unknown>;
}

export function readValueFile(path: string, cwd: string): Buffer {
  try {
    return readFileSync(resolve(cwd, path));
  } catch (e) {
    throw new UserError(`Could not read file: ${path}\n${(e as Error).message}`);
  }
}
