import { EdgeError } from "../../core/errors.js";

/** The codes of the routes and Custom Domains API (the hosted API's where known: 10019, 10020, 10022, 10083, 100116, 100117). */
export const RoutesCodes = {
  validation: 10021,
  scriptNotFound: 10019,
  duplicateRoute: 10020,
  patternNotInZone: 10022,
  zoneNotFound: 10083,
  routeNotFound: 10005,
  domainNotFound: 100114,
  domainTaken: 100116,
  dnsRecordConflict: 100117,
  hostnameDelegated: 100192, // ours
  tooManyPendingCertificates: 100193, // ours
} as const;

const invalid = (message: string, pointer?: string) => new EdgeError(400, RoutesCodes.validation, message, { pointer });

/** The refusals of routes and Custom Domains; every message is written here once. */
export const RoutesErrors = {
  invalidPattern: (pattern: string, why: string) => invalid(`Invalid route pattern "${pattern}": ${why}`, "/pattern"),
  patternNotInZone: (pattern: string, zone: string) =>
    new EdgeError(400, RoutesCodes.patternNotInZone, `Route pattern must include zone name: the host of "${pattern}" is not in the zone ${zone}`),
  scriptNotFound: (script: string) =>
    new EdgeError(
      400,
      RoutesCodes.scriptNotFound,
      `Cannot configure a route for a Worker which does not exist: there is no Worker "${script}" in the zone's account`,
    ),
  duplicateRoute: (pattern: string) => new EdgeError(409, RoutesCodes.duplicateRoute, `A route with the pattern "${pattern}" already exists in this zone`),
  routeNotFound: () => new EdgeError(404, RoutesCodes.routeNotFound, "Route not found"),
  body: (what: string) => invalid(what),
  zoneNotFound: (zone: string) => new EdgeError(400, RoutesCodes.zoneNotFound, `Could not find a zone named or identified by "${zone}" in this account`),
  zoneMismatch: (hostname: string, zone: string) => invalid(`${hostname} is not in the zone ${zone}`),
  zoneNotClosest: (hostname: string, zone: string, closest: string) =>
    invalid(
      `${hostname} is answered from the zone ${closest}, not ${zone}: a Custom Domain belongs to the closest zone that encloses its hostname; name ${closest} or no zone`,
    ),
  invalidHostname: (hostname: string) => invalid(`"${hostname}" is not a hostname a Custom Domain can have (no wildcard, no path, no port)`, "/hostname"),
  hostnameTooLongForCertificate: (hostname: string, max: number) =>
    invalid(
      `"${hostname.slice(0, 40)}…" has ${hostname.length} characters; a Custom Domain may have at most ${max}, so that its certificate's challenge name (_acme-challenge.<hostname>) is still a DNS name`,
      "/hostname",
    ),
  tooManyPendingCertificates: (max: number, waiting: number) =>
    new EdgeError(
      429,
      RoutesCodes.tooManyPendingCertificates,
      `This account has ${waiting} Custom Domain certificates not yet issued (pending or failed); at most ${max} may wait at once. Attach more once some are issued, or detach domains whose certificates fail.`,
    ),
  environment: (environment: string) => invalid(`environment "${environment}": this platform has one environment per Worker, "production"`, "/environment"),
  domainNotFound: () => new EdgeError(404, RoutesCodes.domainNotFound, "Custom Domain not found"),
  domainTaken: (hostname: string, service: string) =>
    new EdgeError(
      409,
      RoutesCodes.domainTaken,
      `Hostname '${hostname}' already in use by other custom domain (the Worker "${service}"). Either delete it, try a different hostname, or use the option 'override_existing_origin' to override.`,
    ),
  dnsRecordConflict: (hostname: string) =>
    new EdgeError(
      409,
      RoutesCodes.dnsRecordConflict,
      `Hostname '${hostname}' already has externally managed DNS records (A, CNAME, etc). Either delete them, try a different hostname, or use the option 'override_existing_dns_record' to override.`,
    ),
  hostnameDelegated: (hostname: string) =>
    new EdgeError(400, RoutesCodes.hostnameDelegated, `Hostname '${hostname}' is delegated (it has NS records): its addresses are another server's to answer`),
  tooMany: (limit: number) => invalid(`at most ${limit} routes or domains may be given in one request`),
};
