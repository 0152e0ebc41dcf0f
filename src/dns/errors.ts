import { EdgeError } from "../core/errors.js";

/**
 * Error codes of the DNS API. The numbers the hosted API is known to use are kept, so clients that test
 * for them behave the same; the few marked "ours" have no known public counterpart and are documented in docs/dns.md.
 */
export const DnsCodes = {
  validation: 1004, // "DNS Validation Error" wrapper, details in error_chain
  invalidZone: 1001,
  zoneExists: 1061,
  zoneNameInvalid: 1097, // ours
  nameInvalid: 9000,
  targetNotAllowed: 9003,
  aContent: 9005,
  aaaaContent: 9006,
  cnameContent: 9007, // ours (the hosted API shows the text without a code)
  contentInvalid: 9009, // ours: content/data of other types
  typeInvalid: 9011, // ours
  ttl: 9021,
  cnameChain: 9039, // ours: proxied CNAME chain that ends inside our zones without an address
  proxied: 9041,
  soa: 9050, // ours: SOA bounds
  cnameBlocksOthers: 81053,
  cnameExists: 81054,
  identicalRecord: 81058,
  nsConflict: 81056, // ours: an NS delegation shares its name with other records
  recordNotFound: 81044,
  importInvalid: 9020, // ours: zone file syntax
  fieldInvalid: 9008, // ours: comment, tags, settings, proxied
} as const;

/** The shape the hosted API uses for record validation: code 1004 with the specific reason chained. */
export function validationError(code: number, message: string, pointer?: string): EdgeError {
  return new EdgeError(400, DnsCodes.validation, "DNS Validation Error", { chain: [{ code, message }], pointer });
}

/** Errors the hosted API reports with their own top-level code. */
export const dnsError = (code: number, message: string, status = 400) => new EdgeError(status, code, message);

export const zoneNotFound = () => new EdgeError(404, DnsCodes.invalidZone, "Invalid zone identifier");
export const recordNotFound = () => new EdgeError(404, DnsCodes.recordNotFound, "Record does not exist.");
