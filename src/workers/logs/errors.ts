import { EdgeError } from "../../core/errors.js";
import { WorkersCodes } from "../errors.js";

const invalid = (message: string, pointer?: string) => new EdgeError(400, WorkersCodes.validation, message, { pointer });

/** The Workers Logs refusals (settings and queries); every message is written here once. */
export const LogsErrors = {
  setting: (field: string, why: string) => invalid(`observability.${field}: ${why}`, `/observability/${field.replaceAll(".", "/")}`),
  unknownKey: (key: string, known: readonly string[]) =>
    invalid(`"${key}" is not a field of this platform's Workers Logs; the fields are ${known.join(", ")}`, "/parameters/filters"),
  keyType: (key: string, type: string, wanted: string) => invalid(`"${key}" is a ${wanted} field; a filter on it must have type "${wanted}", not "${type}"`),
  operation: (key: string, operation: string, why: string) => invalid(`filter on "${key}": the operation "${operation}" ${why}`),
  notBuilt: (what: string) => invalid(`${what} is not available in this platform's Workers Logs (it keeps and lists events and invocations)`),
  timeframe: (why: string) => invalid(`timeframe: ${why}`, "/timeframe"),
  dataset: (name: string) => invalid(`dataset "${name}" does not exist here; the one dataset is "cloudflare-workers"`, "/datasets"),
  badCursor: () => invalid("offset: not the $metadata.id of an event of this query", "/offset"),
};
