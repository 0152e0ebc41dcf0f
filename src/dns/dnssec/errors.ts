import { EdgeError } from "../../core/errors.js";

/** DNSSEC refusals (codes ours: the hosted API's are not known; 1004 is its generic validation code). */
export const DnssecCodes = {
  invalid: 1004,
  notSigned: 9600, // ours
  rolloverBusy: 9601, // ours
  rolloverTooEarly: 9602, // ours
  notOnSeveralNodes: 9603, // ours
} as const;

const invalid = (message: string, pointer?: string) => new EdgeError(400, DnssecCodes.invalid, message, { pointer });

export const DnssecErrors = {
  unsupported: (field: string, why: string) => invalid(`${field}: ${why}`, `/${field}`),
  notSigned: () => new EdgeError(400, DnssecCodes.notSigned, "DNSSEC is not enabled on this zone; enable it first (PATCH status active)."),
  rolloverBusy: (role: string) =>
    new EdgeError(400, DnssecCodes.rolloverBusy, `A ${role.toUpperCase()} rollover is in progress; finish it before starting another.`),
  notOnSeveralNodes: () =>
    new EdgeError(
      400,
      DnssecCodes.notOnSeveralNodes,
      "DNSSEC is not available with --database-url yet: signing keys are kept on one node, and the other nodes would answer the zone unsigned (see docs/scale-out.md).",
    ),
  rolloverTooEarly: (step: string, after: string, why: string) =>
    new EdgeError(
      400,
      DnssecCodes.rolloverTooEarly,
      `Too early to ${step}: wait until ${after} (${why}). Running it earlier could leave resolvers unable to validate the zone.`,
    ),
};
