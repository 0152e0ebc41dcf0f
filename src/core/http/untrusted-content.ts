/**
 * Headers of every answer whose body is a tenant's bytes served from one of the platform's origins (S3 and R2
 * objects; the AI gateway's /v1 answers set the same in ai-gateway/proxy/relay.ts): a browser runs nothing of it
 * (`sandbox` gives the page an opaque origin, so no script, no storage, no Service Worker of the platform's origin)
 * and never guesses a type other than the one stated.
 */
export const UNTRUSTED_CONTENT_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  "content-security-policy": "default-src 'none'; sandbox",
  "x-content-type-options": "nosniff",
});
