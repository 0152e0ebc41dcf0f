/**
 * Names of question types and response codes, as DNS analytics (hosted `queryType`, `responseCode`) and the metrics'
 * labels spell them: one table for both, so a dashboard and a PromQL query agree.
 */

/** The record types with a name here (a bounded set: labels and dimensions stay few); any other has none. */
export const QUESTION_TYPE_NAMES: Readonly<Record<number, string>> = {
  1: "A",
  2: "NS",
  5: "CNAME",
  6: "SOA",
  12: "PTR",
  13: "HINFO",
  15: "MX",
  16: "TXT",
  28: "AAAA",
  29: "LOC",
  33: "SRV",
  35: "NAPTR",
  37: "CERT",
  39: "DNAME",
  43: "DS",
  44: "SSHFP",
  46: "RRSIG",
  47: "NSEC",
  48: "DNSKEY",
  50: "NSEC3",
  51: "NSEC3PARAM",
  52: "TLSA",
  53: "SMIMEA",
  59: "CDS",
  60: "CDNSKEY",
  61: "OPENPGPKEY",
  64: "SVCB",
  65: "HTTPS",
  99: "SPF",
  251: "IXFR",
  252: "AXFR",
  255: "ANY",
  256: "URI",
  257: "CAA",
};

/** Response codes 0–10 (RFC 1035, RFC 2136). */
const RESPONSE_CODE_NAMES: readonly string[] = [
  "NOERROR",
  "FORMERR",
  "SERVFAIL",
  "NXDOMAIN",
  "NOTIMP",
  "REFUSED",
  "YXDOMAIN",
  "YXRRSET",
  "NXRRSET",
  "NOTAUTH",
  "NOTZONE",
];

/** A response code's name; another is `RCODE<n>`. */
export const responseCodeName = (n: number) => RESPONSE_CODE_NAMES[n] ?? `RCODE${n}`;
