import type { FastifyInstance } from "fastify";
import type { Readable } from "node:stream";
import { z } from "zod";
import { ok } from "../../core/http/envelope.js";
import { parseWith } from "../../core/http/validate.js";
import { R2Codes, R2Errors } from "../errors.js";
import { R2Limits } from "../limits.js";
import { type BucketRef, type R2CorsRule, type R2Store } from "../store.js";

type Route = { Params: { account_id: string; bucket: string } };

/** The methods a CORS rule may allow, as S3's PutBucketCors (s3/cors.ts) checks them. */
const CORS_METHODS = ["GET", "PUT", "POST", "DELETE", "HEAD"] as const;
const oneWildcardAtMost = (s: string) => s.indexOf("*") === s.lastIndexOf("*");
const patterns = (what: string) =>
  z
    .array(
      z
        .string()
        .min(1)
        .max(1024)
        .refine(oneWildcardAtMost, { message: `${what} can not have more than one wildcard` }),
    )
    .max(100);

/** The hosted v4 shape of a bucket's CORS policy (what `wrangler r2 bucket cors set` sends). */
const corsBody = z.object({
  rules: z
    .array(
      z.object({
        id: z.string().max(255).optional(),
        allowed: z.object({
          origins: patterns("an allowed origin").min(1),
          methods: z.array(z.enum(CORS_METHODS)).min(1).max(CORS_METHODS.length),
          headers: patterns("an allowed header").optional(),
        }),
        exposeHeaders: z.array(z.string().min(1).max(1024)).max(100).optional(),
        maxAgeSeconds: z.number().int().min(0).max(999_999_999).optional(),
      }),
    )
    .min(1)
    .max(R2Limits.maxCorsRules),
});

const corsJson = (r: R2CorsRule) => ({
  ...(r.id !== undefined && { id: r.id }),
  allowed: { origins: r.allowedOrigins, methods: r.allowedMethods, headers: r.allowedHeaders },
  exposeHeaders: r.exposeHeaders,
  ...(r.maxAgeSeconds !== undefined && { maxAgeSeconds: r.maxAgeSeconds }),
});

const lifecycleBody = z.object({ rules: z.array(z.unknown()).max(1000) });

/**
 * A bucket's CORS policy through the v4 API (`wrangler r2 bucket cors list|set|delete`): the same rules S3's
 * PutBucketCors keeps, so a policy set either way is answered both ways. Object lifecycle rules: this platform has
 * none (nothing expires objects or aborts uploads on a schedule), so a bucket's list is empty and a change that adds
 * a rule is refused by name, never accepted and ignored. Registered inside the R2 routes' scope, which reads bodies
 * itself (`readJson`).
 */
export function registerBucketSettingsRoutes(app: FastifyInstance, store: R2Store, readJson: (raw: Readable) => Promise<unknown>): void {
  const base = "/accounts/:account_id/r2/buckets/:bucket";
  const read = { config: { permission: "r2_read" } } as const;
  const edit = { config: { permission: "r2_edit" } } as const;
  /** The bucket the path names, in the path's account, or its 404. */
  const bucketRef = async (params: Route["Params"]): Promise<BucketRef> => {
    if (!(await store.getBucket(params.account_id, params.bucket))) throw R2Errors.bucketNotFound();
    return { accountId: params.account_id, bucketName: params.bucket };
  };

  app.get<Route>(`${base}/cors`, read, async (req) => {
    // A bucket without a policy has no rules (what wrangler reads as "no CORS configuration").
    const rules = (await store.getBucketCors(await bucketRef(req.params))) ?? [];
    return ok({ rules: rules.map(corsJson) });
  });
  app.put<Route>(`${base}/cors`, edit, async (req) => {
    const bucket = await bucketRef(req.params);
    const body = parseWith(corsBody, await readJson(req.raw), R2Codes.invalidArgument);
    const rules = body.rules.map((r): R2CorsRule => ({
      ...(r.id !== undefined && { id: r.id }),
      allowedOrigins: r.allowed.origins,
      allowedMethods: r.allowed.methods,
      allowedHeaders: r.allowed.headers ?? [],
      exposeHeaders: r.exposeHeaders ?? [],
      ...(r.maxAgeSeconds !== undefined && { maxAgeSeconds: r.maxAgeSeconds }),
    }));
    await store.putBucketCors(bucket, rules);
    return ok({});
  });
  app.delete<Route>(`${base}/cors`, edit, async (req) => {
    await store.deleteBucketCors(await bucketRef(req.params));
    return ok({});
  });

  app.get<Route>(`${base}/lifecycle`, read, async (req) => {
    await bucketRef(req.params);
    return ok({ rules: [] });
  });
  app.put<Route>(`${base}/lifecycle`, edit, async (req) => {
    await bucketRef(req.params);
    const body = parseWith(lifecycleBody, await readJson(req.raw), R2Codes.invalidArgument);
    if (body.rules.length > 0) throw R2Errors.lifecycleUnsupported();
    return ok({});
  });
}
