import type { CliContext } from "../../core/cli/context.js";
import { EdgeError, UserError } from "../../core/errors.js";
import { parseBulkEntry } from "../bulk/entry.js";
import type { KvBulkEntry } from "../store.js";
import { checkKey, forItem, prepareEntry } from "../validation.js";
import { openBackend, userErrors, type BackendArgs } from "./backend.js";
import { readValueFile } from "./key.js";
import type { SelectorArgs } from "./target.js";

type BulkArgs = SelectorArgs & BackendArgs & { filename?: string };

const KNOWN_FIELDS = new Set(["key", "value", "expiration", "expiration_ttl", "metadata", "base64"]);
/** How many bad entries one error message lists before it stops. */
const MAX_LISTED = 12;

function readJsonFile(filename: string, cwd: string): unknown {
  const text = readValueFile(filename, cwd).toString("utf8");
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new UserError(`Could not parse "${filename}" as JSON: ${(e as Error).message}`);
  }
}

function typeName(v: unknown): string {
  return v === null ? "null" : Array.isArray(v) ? "array" : typeof v;
}

/** Every entry is checked (shape and limits) before the first write, so a bad file writes nothing. */
function validateBulkFile(data: unknown, filename: string, warn: (m: string) => void): KvBulkEntry[] {
  if (!Array.isArray(data)) {
    throw new UserError(`Unexpected JSON input from "${filename}".\nExpected an array of key-value objects but got type "${typeName(data)}".`);
  }
  const problems: string[] = [];
  const unexpected: string[] = [];
  const entries: KvBulkEntry[] = [];
  data.forEach((raw, i) => {
    try {
      const e = parseBulkEntry(raw, i);
      forItem(`entry ${i}`, () => prepareEntry(e.key, e.value, e));
      entries.push(e);
      const extra = Object.keys(raw as object).filter((k) => !KNOWN_FIELDS.has(k));
      if (extra.length) unexpected.push(`The item at index ${i} contains unexpected properties: ${JSON.stringify(extra)}.`);
    } catch (err) {
      if (!(err instanceof EdgeError)) throw err;
      problems.push(err.message);
    }
  });
  if (problems.length) {
    const listed = problems.slice(0, MAX_LISTED).concat(problems.length > MAX_LISTED ? [`... and ${problems.length - MAX_LISTED} more`] : []);
    throw new UserError(
      `Unexpected JSON input from "${filename}": ${problems.length} of ${data.length} entries are invalid, so nothing was written.\n` +
        `Each item must be {"key": string, "value": string, "expiration"?: number, "expiration_ttl"?: number, "metadata"?: object, "base64"?: boolean}.\n` +
        listed.join("\n"),
    );
  }
  if (unexpected.length) warn(`Unexpected key-value properties in "${filename}".\n${unexpected.slice(0, MAX_LISTED).join("\n")}`);
  return entries;
}

export async function bulkPut(args: BulkArgs, ctx: CliContext): Promise<void> {
  const filename = args.filename!;
  const entries = validateBulkFile(readJsonFile(filename, ctx.cwd), filename, (m) => ctx.log.warn(m));
  const { backend } = await openBackend(args, ctx);
  const bar = await ctx.progress(entries.length, "Writing", "items");
  try {
    await userErrors("BULK PUT", () => backend.putMany(entries, (n) => bar.update(n)));
  } finally {
    bar.stop();
    backend.close();
  }
  ctx.log.info(`Success! Wrote ${entries.length} key-value pair${entries.length === 1 ? "" : "s"}.`);
}

function validateKeyFile(data: unknown, filename: string): string[] {
  if (!Array.isArray(data)) throw new UserError(`Expected an array of strings in "${filename}" but got:\n${JSON.stringify(data)}`);
  const problems: string[] = [];
  const keys = data.flatMap((item, i) => {
    const key =
      typeof item === "string"
        ? item
        : typeof item === "object" && item !== null && typeof (item as { name?: unknown }).name === "string"
          ? (item as { name: string }).name
          : undefined;
    if (key === undefined) {
      problems.push(
        `Expected an array of strings or objects with a "name" key.\nThe item at index ${i} is type: "${typeName(item)}" - ${JSON.stringify(item)}`,
      );
      return [];
    }
    try {
      forItem(`entry ${i}`, () => checkKey(key));
    } catch (err) {
      if (!(err instanceof EdgeError)) throw err;
      problems.push(err.message);
    }
    return [key];
  });
  if (problems.length) throw new UserError(`Invalid keys in "${filename}", so nothing was deleted.\n${problems.slice(0, MAX_LISTED).join("\n")}`);
  return keys;
}

export async function bulkDelete(args: BulkArgs & { force?: boolean }, ctx: CliContext): Promise<number> {
  const filename = args.filename!;
  const keys = validateKeyFile(readJsonFile(filename, ctx.cwd), filename);
  const { target, backend } = await openBackend(args, ctx);
  try {
    const question = `Are you sure you want to delete all the keys read from "${filename}" from kv-namespace with ${target.display}?`;
    if (!(await ctx.confirmDestructive(question, { given: args.force, flag: "--force (-f)" }))) {
      ctx.log.info(`Not deleting keys read from "${filename}".`);
      return 0;
    }
    const bar = await ctx.progress(keys.length, "Deleting", "items");
    try {
      await userErrors("BULK DELETE", () => backend.deleteMany(keys, (n) => bar.update(n)));
    } finally {
      bar.stop();
    }
  } finally {
    backend.close();
  }
  ctx.log.info(`Success! Deleted ${keys.length} key${keys.length === 1 ? "" : "s"}.`);
  return 0;
}
