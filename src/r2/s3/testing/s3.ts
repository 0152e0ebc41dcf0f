/**
 * Test-only helpers for the S3 API: S3 credentials of API tokens minted on a test platform, an SDK client for
 * them, and Debian's aws CLI (2.9, /usr/bin/aws) run against the platform.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import type { S3Client, S3ClientConfig } from "@aws-sdk/client-s3";
import type { TestPlatform } from "../../../core/testing/platform.js";
import { s3SecretOf } from "../credentials.js";

export interface S3Credentials {
  accessKeyId: string;
  secretAccessKey: string;
}

/** R2's derivation: the access key id is the token's id, the secret the SHA-256 (hex) of its value. */
export const s3CredentialsOf = (token: { id: string; value: string }): S3Credentials => ({
  accessKeyId: token.id,
  secretAccessKey: s3SecretOf(token.value),
});

/** Mints an API token with the global key (permission ids on one account, or `*`) and returns its S3 credentials. */
export async function mintS3Credentials(p: TestPlatform, permissions: string[], accountId: string = p.accountId): Promise<S3Credentials> {
  const r = await p.api("POST", "/user/tokens", { name: `s3 ${permissions.join(",")}`, permissions, account_id: accountId }, p.keyHeaders());
  if (r.status !== 200) throw new Error(`token creation failed: ${JSON.stringify(r.body)}`);
  return s3CredentialsOf(r.body.result);
}

/** The S3 credentials of the platform's bootstrap token (r2_edit on the bootstrap account among the rest). */
export async function bootstrapS3Credentials(p: TestPlatform): Promise<S3Credentials> {
  const verified = await p.api("GET", "/user/tokens/verify");
  return s3CredentialsOf({ id: verified.body.result.id, value: p.token });
}

/** An SDK client for the platform's S3 endpoint as R2's documentation configures one (region auto). */
export async function s3Client(p: TestPlatform, credentials: S3Credentials, extra: Partial<S3ClientConfig> = {}): Promise<S3Client> {
  const { S3Client } = await import("@aws-sdk/client-s3");
  return new S3Client({ endpoint: p.url, region: "auto", forcePathStyle: true, credentials, maxAttempts: 1, ...extra });
}

/** Debian's aws CLI 2 (an `aws` earlier on PATH may be another one). */
export const AWS_CLI = "/usr/bin/aws";
export const awsCliMissing = () => (existsSync(AWS_CLI) ? false : "Debian's aws CLI is not installed (apt-get install awscli); runs under CI");

export interface AwsResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `aws --endpoint-url <platform> ...args` with the given credentials, region auto, and no config files of the user. */
export function awsCli(p: TestPlatform, credentials: S3Credentials, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<AwsResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(AWS_CLI, ["--endpoint-url", p.url, ...args], {
      cwd: opts.cwd,
      env: {
        PATH: process.env.PATH,
        HOME: opts.cwd ?? process.env.HOME,
        AWS_ACCESS_KEY_ID: credentials.accessKeyId,
        AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
        AWS_DEFAULT_REGION: "auto",
        AWS_CONFIG_FILE: "/dev/null",
        AWS_SHARED_CREDENTIALS_FILE: "/dev/null",
        AWS_PAGER: "",
        ...opts.env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}

/** The S3 error code of an SDK failure (its `name`), or "no error". */
export async function s3ErrorOf(p: Promise<unknown>): Promise<{ code: string; status?: number; message: string }> {
  try {
    await p;
    return { code: "no error", message: "" };
  } catch (e) {
    const err = e as { name: string; message: string; $metadata?: { httpStatusCode?: number } };
    return { code: err.name, status: err.$metadata?.httpStatusCode, message: err.message };
  }
}

export type { S3Client };
