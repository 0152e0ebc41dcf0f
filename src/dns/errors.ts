import { Codes, EdgeError } from "../core/errors.js";

/**
 * Error codes of the DNS API. The numbers the hosted API is known to use are kept, so clients that test
 * for them behave the same; the few marked "ours" have no known public counterpart and are documented in docs/dns.md.
 */
export const DnsCodes = {
  validation: 1004, // "DNS Validation Error" wrapper, details in error_chain
  invalidZone: 1001,
  zoneExists: 1061,
  zoneNestsInOtherAccount: 1096, // ours: a zone inside, or around, a zone of another account
  zoneNameInvalid: 1097, // ours
  zoneBusy: 1098, // ours: the zone kept changing through other nodes while this change was retried
  // The hosted API's "unable to identify <name> as a registered domain", which it answers for a public suffix
  // (its check is the Public Suffix List too).
  notRegistrable: 1099,
  secondaryReadOnly: 1095, // ours (was 1099 until the hosted meaning of 1099 was found): a secondary zone's records come from its primary
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
  managedRecord: 1094, // ours: a record another product keeps (a Worker Custom Domain's) is read-only
  managedByWorkers: 81062, // the hosted API's answer to an A/AAAA/CNAME beside a Worker Custom Domain's record
  recordQuota: 81045, // the hosted API's "Record quota exceeded."
  importInvalid: 9020, // ours: zone file syntax
  fieldInvalid: 9008, // ours: comment, tags, settings, proxied
} as const;

/** The shape the hosted API uses for record validation: code 1004 with the specific reason chained. */
const chained = (code: number, message: string, pointer?: string) =>
  new EdgeError(400, DnsCodes.validation, "DNS Validation Error", { chain: [{ code, message }], pointer });
/** A request that is not what the route takes (a query parameter, a batch list, a multipart field): code 1004 with the reason. */
const invalid = (message: string, pointer?: string) => new EdgeError(400, DnsCodes.validation, message, { pointer });
const refused = (code: number, message: string) => new EdgeError(400, code, message);
const soa = (message: string, pointer: string) => new EdgeError(400, DnsCodes.soa, message, { pointer });

/** The DNS area's refusals; every message is written here once. */
export const DnsErrors = {
  // Zones
  zoneNotFound: () => new EdgeError(404, DnsCodes.invalidZone, "Invalid zone identifier"),
  zoneExists: (name: string) => refused(DnsCodes.zoneExists, `${name} already exists`),
  zoneNestsInOtherAccount: (name: string) =>
    refused(DnsCodes.zoneNestsInOtherAccount, `${name} is inside, or holds, a zone of another account: its names are that account's to serve`),
  zoneBusy: () => new EdgeError(409, DnsCodes.zoneBusy, "The zone is being changed through other nodes of the platform; retry the request"),
  secondaryReadOnly: (what = "records") =>
    new EdgeError(
      400,
      DnsCodes.secondaryReadOnly,
      `This is a secondary zone: its ${what} come from its primary by zone transfer and cannot be changed here; change them on the primary`,
    ),
  zoneNameInvalid: (input: string) =>
    new EdgeError(400, DnsCodes.zoneNameInvalid, `Invalid domain name "${input}": a zone is a registrable domain such as example.com.`, { pointer: "/name" }),
  /** The name is a public suffix (co.uk, github.io) or a top-level domain: under it are other people's domains. */
  notRegistrable: (name: string) =>
    new EdgeError(
      400,
      DnsCodes.notRegistrable,
      `We were unable to identify ${name} as a registered domain: it is a public suffix, under which anyone may register names. Please ensure you are providing the root domain and not any subdomains (e.g., example.com, not subdomain.example.com)`,
      { pointer: "/name" },
    ),
  accountRequired: () => invalid("account.id is required", "/account/id"),
  /** A zone PATCH field this platform cannot change to that value; `why` says what it can do instead. */
  zoneFieldUnsupported: (field: string, why: string) => invalid(`${field}: ${why}`, `/${field}`),

  // Records: which record, and the body as a whole
  recordNotFound: () => new EdgeError(404, DnsCodes.recordNotFound, "Record does not exist."),
  managedRecord: (by: string) =>
    refused(DnsCodes.managedRecord, `This record is read-only: it is managed by ${by}. It goes when that is detached, and cannot be changed or deleted here`),
  managedByWorkers: (type: string) =>
    refused(DnsCodes.managedByWorkers, `A DNS record managed by Workers already exists on that host: no ${type} record can be added beside it`),
  bodyNotObject: () => invalid("The request body must be a JSON object."),

  // Record names
  nameInvalid: (why?: string) => refused(DnsCodes.nameInvalid, why ? `DNS name is invalid: ${why}.` : "DNS name is invalid."),

  // Record fields
  typeInvalid: (given: string, types: readonly string[]) =>
    chained(DnsCodes.typeInvalid, `DNS record type "${given}" is invalid; use one of ${types.join(", ")}.`, "/type"),
  ttlInvalid: () => chained(DnsCodes.ttl, "TTL must be between 60 and 86400 seconds, or 1 for Automatic.", "/ttl"),
  commentInvalid: () => chained(DnsCodes.fieldInvalid, "comment must be a string of at most 500 characters.", "/comment"),
  tagsInvalid: () =>
    chained(DnsCodes.fieldInvalid, 'tags must be strings "name:value"; the name may contain only letters, digits, underscores and hyphens.', "/tags"),
  settingsNotObject: () => chained(DnsCodes.fieldInvalid, "settings must be an object.", "/settings"),
  settingNotBoolean: (key: string) => chained(DnsCodes.fieldInvalid, `settings.${key} must be a boolean.`, `/settings/${key}`),
  flattenCnameOnly: () => chained(DnsCodes.fieldInvalid, "settings.flatten_cname applies to CNAME records only.", "/settings/flatten_cname"),
  addressFamilyConflict: () => chained(DnsCodes.fieldInvalid, "settings.ipv4_only and settings.ipv6_only cannot both be true.", "/settings"),
  proxiedNotBoolean: () => chained(DnsCodes.fieldInvalid, "proxied must be a boolean.", "/proxied"),
  privateRoutingUnsupported: () =>
    chained(
      DnsCodes.fieldInvalid,
      "private_routing: routing records to private networks (Cloudflare Tunnel) is not supported on this platform; only false is accepted.",
      "/private_routing",
    ),
  notProxiable: (type: string) =>
    refused(DnsCodes.proxied, `Invalid proxied mode. Record cannot be proxied: only A, AAAA and CNAME records can be proxied, not ${type}.`),

  // Record content
  aContent: () => refused(DnsCodes.aContent, "Content for A record must be a valid IPv4 address."),
  aaaaContent: () => refused(DnsCodes.aaaaContent, "Content for AAAA record must be a valid IPv6 address."),
  platformAddress: (address: string) => refused(DnsCodes.targetNotAllowed, `Target ${address} is not allowed: the address belongs to the platform.`),
  cnameContent: () => chained(DnsCodes.cnameContent, "Content for CNAME record is invalid.", "/content"),
  cnameToItself: () => chained(DnsCodes.cnameContent, "Content for CNAME record is invalid: a CNAME cannot point to itself.", "/content"),
  /** Content of a type whose value is in `content` (NS, PTR, MX, TXT). */
  contentInvalid: (type: string, why: string) => chained(DnsCodes.contentInvalid, `Content for ${type} record is invalid: ${why}.`, "/content"),
  txtQuotes: () =>
    chained(DnsCodes.contentInvalid, "TXT content has inconsistent quotation marks: every string must start and end with a double quote.", "/content"),
  priorityRequired: (type: string) => chained(DnsCodes.contentInvalid, `${type} records need a priority between 0 and 65535.`, "/priority"),
  /** The `data` of a structured type (SRV, CAA, ...). */
  dataInvalid: (type: string, why: string) => chained(DnsCodes.contentInvalid, `Invalid ${type} record: ${why}.`, "/data"),
  proxiedChain: (name: string, end: string) =>
    chained(DnsCodes.cnameChain, `A proxied CNAME must lead to an A or AAAA record; the chain from ${name} ends at ${end}, which has none.`, "/content"),

  /** The zone would hold more records than the operator allows (--dns-max-records-per-zone). */
  recordQuota: (max: number) =>
    refused(DnsCodes.recordQuota, `Record quota exceeded. A zone holds at most ${max} records on this platform; delete records before adding more.`),

  // Records beside each other at one name
  identicalRecord: () => refused(DnsCodes.identicalRecord, "An identical record already exists."),
  nsConflict: () => refused(DnsCodes.nsConflict, "NS records cannot exist on the same name as any other record type."),
  cnameBlocksOthers: () => refused(DnsCodes.cnameBlocksOthers, "An A, AAAA, or CNAME record with that host already exists."),
  cnameExists: () =>
    refused(
      DnsCodes.cnameExists,
      "A CNAME record with that host already exists. For more details, refer to <https://developers.cloudflare.com/dns/manage-dns-records/troubleshooting/records-with-same-name/>.",
    ),

  // Record lists (GET dns_records, GET zones)
  typeFilter: (type: string) => invalid(`type: "${type}" is not a record type`, "type"),
  proxiedFilter: () => invalid("proxied must be true or false", "proxied"),
  matchMode: (param: string) => invalid(`${param} must be "any" or "all"`, param),
  orderInvalid: (orders: Iterable<string>) => invalid(`order must be one of ${[...orders].join(", ")}`, "order"),
  directionInvalid: () => invalid('direction must be "asc" or "desc"', "direction"),

  // Batches
  batchListNotArray: (list: string) => invalid(`${list} must be an array`, `/${list}`),
  batchTooLarge: (max: number, total: number) => invalid(`A batch holds at most ${max} changes; this one has ${total}.`),
  batchIdRequired: (list: string, index: number) => invalid(`${list}[${index}].id is required`, `/${list}/${index}/id`),

  // Zone files
  importNotMultipart: () => invalid('Send the zone file as multipart/form-data in the field "file".'),
  importFileMissing: () => invalid('The multipart field "file" with the zone file is missing.', "file"),
  /** The multipart body itself (cut short, broken part headers), as core/http/multipart.ts reports it. */
  importFormInvalid: (message: string) => invalid(message),
  importFormTooLarge: (message: string) => new EdgeError(413, Codes.bodyTooLarge, message),
  zoneFileTooManyRecords: (max: number) =>
    chained(DnsCodes.importInvalid, `A zone file import adds at most ${max} records; split the file and import the parts one after another.`),
  zoneFileLine: (line: number, why: string) => chained(DnsCodes.importInvalid, `Zone file line ${line}: ${why}.`),
  zoneFileRdata: (type: string, text: string, why: string) => chained(DnsCodes.importInvalid, `Cannot read ${type} data "${text}": ${why}.`),
  /** A record of a zone file refused as the API would refuse it, with the line it came from. */
  zoneFileRecord: (line: number, refusal: EdgeError) => {
    const d = refusal.errors[0];
    const why = d.error_chain?.[0]?.message ?? d.message;
    return new EdgeError(400, d.code, `Zone file line ${line}: ${why}`, { chain: d.error_chain });
  },

  // DNS settings and SOA
  soaMname: (mname: string) => soa(`soa.mname: "${mname}" is not a host name`, "/soa/mname"),
  soaRname: (rname: string) => soa(`soa.rname: "${rname}" is neither an e-mail address nor a DNS name`, "/soa/rname"),
  soaRetryAboveRefresh: (retry: number, refresh: number) => soa(`soa.retry (${retry}) must not exceed soa.refresh (${refresh})`, "/soa/retry"),
  soaExpireBelowRefresh: (expire: number, refresh: number) => soa(`soa.expire (${expire}) must not be smaller than soa.refresh (${refresh})`, "/soa/expire"),
  zoneDefaultsNotObject: () => soa("zone_defaults must be an object", "/zone_defaults"),
};
