import type { R2CorsRule } from "../store.js";
import type { S3Call } from "./call.js";
import { S3Errors } from "./errors.js";
import { elementsOf, parseXml, textOf, textsOf, type XmlContent } from "./xml.js";

/**
 * Bucket CORS as S3 has it: PutBucketCors / GetBucketCors / DeleteBucketCors keep a bucket's rules, a browser's
 * preflight (OPTIONS) is answered from them, and requests that carry an Origin get the CORS headers of the first
 * rule that allows them. Without a matching rule a preflight is a 403 and other requests get no CORS headers.
 */

const METHODS = new Set(["GET", "PUT", "POST", "DELETE", "HEAD"]);
const MAX_ID_CHARS = 255;

const oneWildcardAtMost = (s: string) => s.indexOf("*") === s.lastIndexOf("*");

/** Parses and checks a PutBucketCors body. */
export function corsRulesFromXml(body: Buffer): R2CorsRule[] {
  const doc = parseXml(body, "CORSConfiguration");
  const rules = elementsOf(doc, "CORSRule").map((r): R2CorsRule => {
    const rule: R2CorsRule = {
      allowedOrigins: textsOf(r, "AllowedOrigin"),
      allowedMethods: textsOf(r, "AllowedMethod"),
      allowedHeaders: textsOf(r, "AllowedHeader"),
      exposeHeaders: textsOf(r, "ExposeHeader"),
    };
    const id = textOf(r, "ID");
    if (id !== undefined) {
      if (id.length > MAX_ID_CHARS) throw S3Errors.invalidArgument(`A CORS rule ID has at most ${MAX_ID_CHARS} characters`, "ID", id);
      rule.id = id;
    }
    const maxAge = textOf(r, "MaxAgeSeconds");
    if (maxAge !== undefined) {
      if (!/^\d{1,9}$/.test(maxAge.trim())) throw S3Errors.malformedXml();
      rule.maxAgeSeconds = Number(maxAge.trim());
    }
    if (rule.allowedOrigins.length === 0 || rule.allowedMethods.length === 0) throw S3Errors.malformedXml();
    for (const m of rule.allowedMethods) {
      if (!METHODS.has(m)) throw S3Errors.invalidRequest(`Found unsupported HTTP method in CORS config. Unsupported method is ${m}`);
    }
    for (const o of rule.allowedOrigins) {
      if (!oneWildcardAtMost(o)) throw S3Errors.invalidRequest(`AllowedOrigin "${o}" can not have more than one wildcard.`);
    }
    for (const h of rule.allowedHeaders) {
      if (!oneWildcardAtMost(h)) throw S3Errors.invalidRequest(`AllowedHeader "${h}" can not have more than one wildcard.`);
    }
    return rule;
  });
  if (rules.length === 0) throw S3Errors.malformedXml();
  return rules;
}

export function corsRulesToXml(rules: R2CorsRule[]): XmlContent {
  return {
    CORSRule: rules.map((r) => ({
      ...(r.id !== undefined ? { ID: r.id } : {}),
      AllowedOrigin: r.allowedOrigins,
      AllowedMethod: r.allowedMethods,
      ...(r.allowedHeaders.length ? { AllowedHeader: r.allowedHeaders } : {}),
      ...(r.exposeHeaders.length ? { ExposeHeader: r.exposeHeaders } : {}),
      ...(r.maxAgeSeconds !== undefined ? { MaxAgeSeconds: r.maxAgeSeconds } : {}),
    })),
  };
}

/** `pattern` with at most one `*` standing for any run of characters. */
function wildcardMatch(pattern: string, value: string): boolean {
  const star = pattern.indexOf("*");
  if (star < 0) return pattern === value;
  const head = pattern.slice(0, star);
  const tail = pattern.slice(star + 1);
  return value.length >= head.length + tail.length && value.startsWith(head) && value.endsWith(tail);
}

/** The first rule allowing `origin` to use `method` with all of `headers` (lower-case names). */
export function matchingRule(rules: readonly R2CorsRule[], origin: string, method: string, headers: readonly string[] = []): R2CorsRule | undefined {
  return rules.find(
    (r) =>
      r.allowedOrigins.some((o) => wildcardMatch(o, origin)) &&
      r.allowedMethods.includes(method) &&
      headers.every((h) => r.allowedHeaders.some((a) => wildcardMatch(a.toLowerCase(), h))),
  );
}

const allowOrigin = (rule: R2CorsRule, origin: string): Record<string, string> =>
  rule.allowedOrigins.includes("*")
    ? { "access-control-allow-origin": "*" }
    : { "access-control-allow-origin": origin, "access-control-allow-credentials": "true" };

/** The headers of a preflight's answer once `rule` allowed it. */
export function preflightHeaders(rule: R2CorsRule, origin: string, requestHeaders: readonly string[]): Record<string, string> {
  const h: Record<string, string> = {
    ...allowOrigin(rule, origin),
    "access-control-allow-methods": rule.allowedMethods.join(", "),
    vary: "Origin, Access-Control-Request-Headers, Access-Control-Request-Method",
  };
  if (requestHeaders.length > 0) h["access-control-allow-headers"] = requestHeaders.join(", ");
  if (rule.exposeHeaders.length > 0) h["access-control-expose-headers"] = rule.exposeHeaders.join(", ");
  if (rule.maxAgeSeconds !== undefined) h["access-control-max-age"] = String(rule.maxAgeSeconds);
  return h;
}

/** The headers an actual (non-preflight) request from an allowed origin gets. */
export function corsResponseHeaders(rule: R2CorsRule, origin: string): Record<string, string> {
  const h: Record<string, string> = { ...allowOrigin(rule, origin), vary: "Origin" };
  if (rule.exposeHeaders.length > 0) h["access-control-expose-headers"] = rule.exposeHeaders.join(", ");
  return h;
}

/** Access-Control-Request-Headers as lower-case names. */
export function requestedHeaders(value: string | undefined): string[] {
  return (value ?? "")
    .split(",")
    .map((h) => h.trim().toLowerCase())
    .filter(Boolean);
}

// ---- the three bucket operations ----

export async function putBucketCors(call: S3Call): Promise<void> {
  const rules = corsRulesFromXml(await call.smallBody());
  await call.store.putBucketCors(call.ref, rules);
  call.sendEmpty(200);
}

export async function getBucketCors(call: S3Call): Promise<void> {
  const rules = await call.store.getBucketCors(call.ref);
  if (!rules) throw S3Errors.noSuchCorsConfiguration(call.bucket!);
  call.sendXml(200, "CORSConfiguration", corsRulesToXml(rules));
}

export async function deleteBucketCors(call: S3Call): Promise<void> {
  await call.store.deleteBucketCors(call.ref);
  call.sendEmpty(204);
}
