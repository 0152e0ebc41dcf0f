import type { ErrorDetail } from "../errors.js";

export interface ResultInfo {
  page: number;
  per_page: number;
  count: number;
  total_count: number;
  total_pages: number;
  [extra: string]: unknown;
}

export interface Envelope<T> {
  success: boolean;
  errors: ErrorDetail[];
  messages: { code: number; message: string; type?: string | null }[];
  result: T | null;
  result_info?: ResultInfo | Record<string, unknown>;
}

export function ok<T>(result: T, resultInfo?: Envelope<T>["result_info"], messages: Envelope<T>["messages"] = []): Envelope<T> {
  const body: Envelope<T> = { success: true, errors: [], messages, result };
  if (resultInfo) body.result_info = resultInfo;
  return body;
}

export function failure(errors: ErrorDetail[], extra?: Record<string, unknown>): Envelope<null> & Record<string, unknown> {
  return { success: false, errors, messages: [], result: null, ...extra };
}
