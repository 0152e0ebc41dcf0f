import type { CliContext } from "../../core/cli/context.js";
import { UserError } from "../../core/errors.js";
import { R2Errors } from "../errors.js";
import { BUCKET_NAME_RE } from "../limits.js";

/** The v4 path of an account's buckets. */
export const bucketsPath = (account: string) => `/accounts/${account}/r2/buckets`;

/** `edgecli r2 bucket create <name>` */
export async function createBucket(args: { name?: string; location?: string; "storage-class"?: string }, ctx: CliContext): Promise<void> {
  const name = args.name!;
  // Checked before any request, with the words the server would answer with (without its code).
  if (!BUCKET_NAME_RE.test(name)) throw new UserError(R2Errors.invalidBucketName(name).message);
  const account = await ctx.accountId();
  ctx.log.info(`Creating bucket '${name}'...`);
  const bucket = await ctx.api().fetchResult<{ name: string; storage_class: string }>("POST", bucketsPath(account), {
    json: { name, locationHint: args.location, storageClass: args["storage-class"] },
  });
  const where = args.location ? `with location hint ${args.location.toUpperCase()} and ` : "with ";
  ctx.log.info(`✅ Created bucket '${name}' ${where}default storage class of ${bucket.storage_class}.`);
  const binding = name.replace(/-/g, "_");
  ctx.log.info(
    `To access your new R2 Bucket in your Worker, add the following snippet to your configuration file:\n[[r2_buckets]]\nbucket_name = "${name}"\nbinding = "${binding}"`,
  );
}

/** `edgecli r2 bucket list` */
export async function listBuckets(_args: object, ctx: CliContext): Promise<void> {
  const account = await ctx.accountId();
  ctx.log.info("Listing buckets...");
  const { buckets } = await ctx.api().fetchResult<{ buckets: { name: string; creation_date: string }[] }>("GET", bucketsPath(account));
  if (buckets.length > 0) ctx.log.info(buckets.map((b) => `name:           ${b.name}\ncreation_date:  ${b.creation_date}`).join("\n\n"));
}

/** `edgecli r2 bucket delete <bucket>` */
export async function deleteBucket(args: { bucket?: string }, ctx: CliContext): Promise<void> {
  const account = await ctx.accountId();
  ctx.log.info(`Deleting bucket ${args.bucket}.`);
  await ctx.api().fetchResult("DELETE", `${bucketsPath(account)}/${encodeURIComponent(args.bucket!)}`);
  ctx.log.info(`Deleted bucket ${args.bucket}.`);
}
