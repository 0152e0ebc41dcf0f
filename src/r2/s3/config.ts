import type { OptionValues } from "../../core/cli/command.js";
import { UserError } from "../../core/errors.js";
import type { serveOptions } from "../config.js";

export interface S3Config {
  /** Lower-case host name without port; "" when only path-style requests are served. */
  host: string;
}

const HOST_RE = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;

export function readS3Config(options: OptionValues<typeof serveOptions>): S3Config {
  const host = options["s3-host"].trim().toLowerCase().replace(/\.$/, "");
  if (host !== "" && !HOST_RE.test(host)) throw new UserError(`--s3-host must be a host name (e.g. r2.localhost), got "${host}"`);
  return { host };
}
