import { z } from "zod";
import { WorkersErrors } from "../errors.js";
import { capnpString } from "../runtime/capnp-string.js";
import { bindingName, type BindingType } from "./binding-type.js";

export interface R2BucketBinding {
  type: "r2_bucket";
  name: string;
  bucket_name: string;
}

/** An R2 bucket of the account, by name; workerd's R2 binding calls go to the R2 area through the binding server. */
export const r2Bucket: BindingType<R2BucketBinding> = {
  type: "r2_bucket",
  schema: z.object({ type: z.literal("r2_bucket"), name: bindingName(), bucket_name: z.string().min(1) }),
  target: { backend: "r2", resource: (b) => b.bucket_name, missing: (b) => WorkersErrors.bucketMissing(b.name, b.bucket_name) },
  workerd: (b, ctx) => `r2Bucket = ${capnpString(ctx.bindingService("r2", b.bucket_name))}`,
};
