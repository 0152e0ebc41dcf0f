import { createReadStream, createWriteStream, existsSync, mkdirSync, renameSync, rmSync, statSync } from "node:fs";
import { dirname, relative, resolve, isAbsolute } from "node:path";
import { PassThrough, Transform, type Readable, type Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { ApiRequestError, type RawResponse } from "../../core/cli/api-client.js";
import type { CliContext } from "../../core/cli/context.js";
import type { Progress } from "../../core/cli/progress.js";
import { UsageError, UserError } from "../../core/errors.js";
import { R2Codes, R2Errors } from "../errors.js";
import { bucketsPath } from "./bucket.js";

/** Files at least this large get a progress bar (on a terminal only). */
const PROGRESS_MIN_BYTES = 4 * 1024 * 1024;

const objectPath = (account: string, bucket: string, key: string) =>
  `${bucketsPath(account)}/${encodeURIComponent(bucket)}/objects/${key.split("/").map(encodeURIComponent).join("/")}`;

function splitObjectPath(path: string | undefined): { bucket: string; key: string } {
  const at = path?.indexOf("/") ?? -1;
  if (!path || at <= 0 || at === path.length - 1) throw new UsageError(`The object path must be in the form of {bucket}/{key} you provided ${path ?? ""}`);
  return { bucket: path.slice(0, at), key: path.slice(at + 1) };
}

/** The errors of a v4 failure envelope; none when the text is not one (the status says enough then). */
function envelopeErrors(text: string): { code: number; message: string }[] {
  try {
    return (JSON.parse(text) as { errors?: { code: number; message: string }[] }).errors ?? [];
  } catch {
    return [];
  }
}
const errorCodes = (text: string) => envelopeErrors(text).map((e) => e.code);

/** Reads a non-2xx raw response as a v4 envelope and throws it as an API error. */
async function failFrom(res: RawResponse, path: string): Promise<never> {
  throw new ApiRequestError(path, res.status, envelopeErrors(await res.body.text()));
}

/** Counts bytes through a stream into a progress bar. */
function meter(progress: Progress): Transform {
  let done = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      done += chunk.length;
      progress.update(done);
      cb(null, chunk);
    },
    flush(cb) {
      progress.stop();
      cb();
    },
  });
}

type PutArgs = {
  objectPath?: string;
  file?: string;
  pipe?: boolean;
  "content-type"?: string;
  "content-disposition"?: string;
  "content-encoding"?: string;
  "content-language"?: string;
  "cache-control"?: string;
  expires?: string;
  ct?: string;
  cd?: string;
  ce?: string;
  cl?: string;
  cc?: string;
  "storage-class"?: string;
};

function metadataHeaders(args: PutArgs): Record<string, string> {
  const h: Record<string, string | undefined> = {
    "content-type": args["content-type"] ?? args.ct,
    "content-disposition": args["content-disposition"] ?? args.cd,
    "content-encoding": args["content-encoding"] ?? args.ce,
    "content-language": args["content-language"] ?? args.cl,
    "cache-control": args["cache-control"] ?? args.cc,
    "cf-r2-storage-class": args["storage-class"],
  };
  if (args.expires !== undefined) {
    const t = Date.parse(args.expires);
    if (!Number.isFinite(t)) throw new UsageError(`--expires must be a date, got "${args.expires}"`);
    h.expires = new Date(t).toUTCString();
  }
  return Object.fromEntries(Object.entries(h).filter((e): e is [string, string] => e[1] !== undefined));
}

/** `edgecli r2 object put <bucket>/<key> (--file | --pipe)` */
export async function putObject(args: PutArgs, ctx: CliContext): Promise<void> {
  const { bucket, key } = splitObjectPath(args.objectPath);
  if (Boolean(args.file) === Boolean(args.pipe)) throw new UsageError("Either the --file or --pipe options are required.");
  const headers = metadataHeaders(args);
  let body: Readable;
  let progress: Progress | undefined;
  if (args.file) {
    const file = resolve(ctx.cwd, args.file);
    if (!existsSync(file) || !statSync(file).isFile()) throw new UserError(`The file "${args.file}" does not exist.`);
    const size = statSync(file).size;
    headers["content-length"] = String(size);
    body = createReadStream(file);
    if (size >= PROGRESS_MIN_BYTES) {
      progress = await ctx.progress(size, "Uploading", "bytes");
      body = body.pipe(meter(progress));
    }
  } else {
    // Streamed as it arrives (chunked): the size of a pipe is unknown up front.
    body = ctx.io.stdin.pipe(new PassThrough());
  }
  const account = await ctx.accountId();
  ctx.log.info(`Creating object "${key}"${args["storage-class"] ? ` with ${args["storage-class"]} storage class` : ""} in bucket "${bucket}".`);
  const path = objectPath(account, bucket, key);
  const res = await ctx.api().raw("PUT", path, { body, headers });
  progress?.stop();
  if (res.status >= 300) await failFrom(res, path);
  await res.body.text();
  ctx.log.info("Upload complete.");
}

/** Without --file the object lands at its key under the current directory; refuse keys that climb out of it. */
function defaultDestination(cwd: string, key: string): string {
  const dest = resolve(cwd, key);
  const rel = relative(cwd, dest);
  if (!rel || rel.startsWith("..") || isAbsolute(rel))
    throw new UserError(`The key "${key}" does not name a file inside the current directory; use --file or --pipe.`);
  return dest;
}

/** `edgecli r2 object get <bucket>/<key> [--file | --pipe]` */
export async function getObject(args: { objectPath?: string; file?: string; pipe?: boolean }, ctx: CliContext): Promise<void> {
  const { bucket, key } = splitObjectPath(args.objectPath);
  if (args.file && args.pipe) throw new UsageError("Use either --file or --pipe, not both.");
  const dest = args.pipe ? undefined : args.file ? resolve(ctx.cwd, args.file) : defaultDestination(ctx.cwd, key);
  const account = await ctx.accountId();
  const path = objectPath(account, bucket, key);
  if (!args.pipe) ctx.log.info(`Downloading "${key}" from "${bucket}".`);
  const res = await ctx.api().raw("GET", path);
  if (res.status === 404) {
    const codes = errorCodes(await res.body.text());
    // A missing bucket is a different failure from a missing key; say which.
    if (codes.includes(R2Codes.bucketNotFound)) throw new UserError(`The bucket "${bucket}" does not exist.`);
    throw new UserError(R2Errors.objectNotFound().message);
  }
  if (res.status >= 300) await failFrom(res, path);
  if (!dest) {
    await pipeline(res.body, ctx.io.stdout as unknown as Writable, { end: false });
    return;
  }
  mkdirSync(dirname(dest), { recursive: true });
  const size = Number(res.headers["content-length"] ?? 0);
  const stages: (Readable | Transform | Writable)[] = [res.body];
  if (size >= PROGRESS_MIN_BYTES) stages.push(meter(await ctx.progress(size, "Downloading", "bytes")));
  // Written beside the destination and renamed at the end, so a broken download never leaves a truncated file.
  const partial = `${dest}.${process.pid}.partial`;
  stages.push(createWriteStream(partial));
  try {
    await pipeline(stages as unknown as [Readable, Writable]);
    renameSync(partial, dest);
  } catch (e) {
    rmSync(partial, { force: true });
    throw new UserError(`The download of "${key}" failed: ${(e as Error).message}`);
  }
  ctx.log.info("Download complete.");
}

/** `edgecli r2 object delete <bucket>/<key>` */
export async function deleteObject(args: { objectPath?: string }, ctx: CliContext): Promise<void> {
  const { bucket, key } = splitObjectPath(args.objectPath);
  const account = await ctx.accountId();
  ctx.log.info(`Deleting object "${key}" from bucket "${bucket}".`);
  await ctx.api().fetchResult("DELETE", objectPath(account, bucket, key));
  ctx.log.info("Delete complete.");
}
