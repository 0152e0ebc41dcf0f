import type { EdgeErrorCode } from "./error-pages.js";

/** Certificate verification failures (Node's codes): 526 under strict. */
const CERTIFICATE_ERRORS = new Set([
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "CERT_UNTRUSTED",
  "CERT_REJECTED",
  "CERT_SIGNATURE_FAILURE",
  "ERR_TLS_CERT_ALTNAME_INVALID",
]);

const codeOf = (err: unknown): string | undefined => {
  const e = err as { code?: unknown; cause?: { code?: unknown } } | undefined;
  const code = e?.code ?? e?.cause?.code;
  return typeof code === "string" ? code : undefined;
};

/** Whether the connection itself failed (nothing was sent): the next address may be tried. */
export function connectFailed(err: unknown): boolean {
  const code = codeOf(err);
  return code === "ECONNREFUSED" || code === "UND_ERR_CONNECT_TIMEOUT" || code === "EHOSTUNREACH" || code === "ENETUNREACH";
}

/** The hosted 52x code of a failed exchange with an origin. */
export function failureCode(err: unknown): EdgeErrorCode {
  const code = codeOf(err) ?? "";
  if (code === "ECONNREFUSED") return 521;
  if (code === "UND_ERR_CONNECT_TIMEOUT" || code === "ETIMEDOUT") return 522;
  if (code === "EHOSTUNREACH" || code === "ENETUNREACH" || code === "ENOTFOUND" || code === "EAI_AGAIN") return 523;
  if (code === "UND_ERR_HEADERS_TIMEOUT") return 524;
  if (CERTIFICATE_ERRORS.has(code)) return 526;
  if (code.startsWith("ERR_SSL") || code.startsWith("ERR_TLS") || code === "EPROTO") return 525;
  return 520;
}
