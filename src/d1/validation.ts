import { D1Errors } from "./errors.js";
import { D1_LIMITS } from "./limits.js";

const NAME = new RegExp(`^[A-Za-z0-9][A-Za-z0-9_-]{0,${D1_LIMITS.nameChars - 1}}$`);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Refuses a database name D1 does not take. */
export function checkDatabaseName(name: unknown): asserts name is string {
  if (typeof name !== "string" || !NAME.test(name)) throw D1Errors.nameInvalid();
}

/** Whether `id` is a database uuid as the platform makes them (lower-case, dashed). */
export const isDatabaseUuid = (id: string) => UUID.test(id);
