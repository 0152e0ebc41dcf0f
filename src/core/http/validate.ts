import type { z } from "zod";
import { Codes, CoreErrors } from "../errors.js";

/**
 * Validates a request body (or query) with a zod schema. The error names the field and the rule,
 * e.g. `ttl: Too small: expected number to be >=60`, and points at it (`source.pointer`).
 */
export function parseWith<S extends z.ZodType>(schema: S, input: unknown, code: number = Codes.validation, status = 400): z.output<S> {
  const r = schema.safeParse(input);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  const path = issue.path.map(String).join(".");
  const message = path ? `${path}: ${issue.message}` : issue.message;
  throw CoreErrors.invalidInput(message, { code, status, pointer: path ? `/${issue.path.map(String).join("/")}` : undefined });
}
