import { EdgeError } from "../core/errors.js";

/**
 * The codes of the edge's API: zone settings (the hosted API's 1006 for a setting name it does not have, 1007 for a
 * value a setting does not take, 1001 for an unknown zone).
 */
export const EdgeCodes = {
  zoneNotFound: 1001,
  unknownSetting: 1006,
  invalidValue: 1007,
  invalidBody: 1004,
} as const;

/** The refusals of the edge's API; every message is written here once. */
export const EdgeErrors = {
  zoneNotFound: () => new EdgeError(404, EdgeCodes.zoneNotFound, "Invalid zone identifier"),
  unknownSetting: (name: string) => new EdgeError(400, EdgeCodes.unknownSetting, `Unrecognized zone setting name: ${name.slice(0, 100)}`),
  invalidValue: (name: string, why: string) =>
    new EdgeError(400, EdgeCodes.invalidValue, `Invalid value for zone setting ${name}: ${why}`, { pointer: "/value" }),
  invalidBody: (why: string) => new EdgeError(400, EdgeCodes.invalidBody, why),
};
