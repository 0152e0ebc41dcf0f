import { BUCKET_NAME_RE } from "../limits.js";
import { S3Errors } from "./errors.js";

/**
 * Where an S3 request points: path style (`/BUCKET/KEY` on any host of the edge port) or virtual-hosted style
 * (`BUCKET.<s3 host>/KEY`), and which account the host names, if any (`<ACCOUNT_ID>.<s3 host>`, or
 * `BUCKET.<ACCOUNT_ID>.<s3 host>`, as R2's `<ACCOUNT_ID>.r2.cloudflarestorage.com`).
 */
export interface S3Address {
  /** The host is the S3 host or a name under it: the request is the S3 API's even when it is not signed. */
  onS3Host: boolean;
  accountId?: string;
  bucket?: string;
  /** The object key, decoded; "" when the request is about the bucket (or the account). */
  key: string;
}

const ACCOUNT_ID_RE = /^[0-9a-f]{32}$/;

/** The labels of `host` before the S3 host name; undefined when it is not the S3 host or a name under it. */
function labelsUnder(hostHeader: string | undefined, s3Host: string): string[] | undefined {
  if (!s3Host || !hostHeader) return undefined;
  const host = hostHeader.toLowerCase().replace(/:\d+$/, "").replace(/\.$/, "");
  if (host === s3Host) return [];
  if (!host.endsWith(`.${s3Host}`)) return undefined;
  return host.slice(0, -(s3Host.length + 1)).split(".");
}

/** Whether `host` is the S3 host name or a name under it. */
export const isOnS3Host = (hostHeader: string | undefined, s3Host: string) => labelsUnder(hostHeader, s3Host) !== undefined;

const decodePath = (s: string) => {
  try {
    return decodeURIComponent(s);
  } catch {
    throw S3Errors.invalidRequest("Couldn't parse the specified URI.");
  }
};

/** Reads the address of a request; undefined when its host is under the S3 host but names nothing S3 knows. */
export function addressOf(hostHeader: string | undefined, rawPath: string, s3Host: string): S3Address | undefined {
  const labels = labelsUnder(hostHeader, s3Host);
  let accountId: string | undefined;
  let hostBucket: string | undefined;
  if (labels) {
    // A 32-hex label is an account id (bucket names of that shape are reached path style).
    const last = labels.at(-1);
    if (last !== undefined && ACCOUNT_ID_RE.test(last)) {
      accountId = last;
      labels.pop();
    }
    if (labels.length > 1) return undefined;
    hostBucket = labels[0];
  }
  const path = rawPath.startsWith("/") ? rawPath.slice(1) : rawPath;
  if (hostBucket !== undefined) return { onS3Host: true, accountId, bucket: hostBucket, key: decodePath(path) };
  const slash = path.indexOf("/");
  const bucket = slash < 0 ? path : path.slice(0, slash);
  const key = slash < 0 ? "" : path.slice(slash + 1);
  return { onS3Host: labels !== undefined, accountId, bucket: bucket === "" ? undefined : decodePath(bucket), key: decodePath(key) };
}

/** Whether a path-style request's first segment could be a bucket (requests for other paths are left to other routes). */
export const looksLikeBucket = (name: string | undefined) => name === undefined || BUCKET_NAME_RE.test(name);
