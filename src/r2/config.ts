import type { OptionSpec } from "../core/cli/command.js";

/**
 * R2's part of `edgecli serve` (defaults live only here). The S3 API's option is read by `readS3Config` in
 * s3/config.ts, as `ctx.options(serveOptions)`, typed by this spec.
 */
export const serveOptions = {
  "s3-host": {
    type: "string",
    default: "r2.localhost",
    describe:
      "Host name of the S3 API on the edge port: <ACCOUNT_ID>.<host> names an account, <BUCKET>.<host> and <BUCKET>.<ACCOUNT_ID>.<host> a bucket (virtual-hosted style); empty turns host-based addressing off (path style works on any host)",
  },
} satisfies Record<string, OptionSpec>;
