import { createHash } from "node:crypto";

/**
 * R2's S3 credentials: the access key id is an API token's id, the secret access key the SHA-256 (hex) of the
 * token's value. The platform keeps exactly that hash of every token (core/auth), so it can check S3 signatures
 * without ever storing a token's value; which also makes the stored hash a credential of its own for S3.
 */
export const s3SecretOf = (tokenValue: string): string => createHash("sha256").update(tokenValue, "utf8").digest("hex");
