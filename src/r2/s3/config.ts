import type { OptionSpec, OptionValues } from "../../core/cli/command.js";
import { UserError } from "../../core/errors.js";

/** `edgecli serve` options of the S3 API (the default is written only here). */
export const s3ServeOptions = {
  "s3-host": {
    type: "string",
    default: "r2.localhost",
    describe:
      "Host name of the S3 API on the edge port: <ACCOUNT_ID>.<host> names an account, <BUCKET>.<host> and <BUCKET>.<ACCOUNT_ID>.<host> a bucket (virtual-hosted style); empty turns host-based addressing off (path style works on any host)",
  },
} as const satisfies Record<string, OptionSpec>;

export interface S3Config {
  /** Lower-case host name without port; "" when only path-style requests are served. */
  host: string;
}

const HOST_RE = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;

export function readS3Config(options: OptionValues<typeof s3ServeOptions>): S3Config {
  const host = options["s3-host"].trim().toLowerCase().replace(/\.$/, "");
  if (host !== "" && !HOST_RE.test(host)) throw new UserError(`--s3-host must be a host name (e.g. r2.localhost), got "${host}"`);
  return { host };
}
