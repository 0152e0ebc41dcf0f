import { ApiError, Codes } from "../errors.js";
import type { ResultInfo } from "./envelope.js";

export interface PageRequest {
  page: number;
  perPage: number;
  offset: number;
}

export interface PageOptions {
  defaultPerPage: number;
  maxPerPage: number;
  minPerPage?: number;
  code?: number;
}

function positiveInt(raw: unknown, name: string, code: number): number | undefined {
  if (raw === undefined || raw === "") return undefined;
  const n = typeof raw === "number" ? raw : Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new ApiError(400, code, `${name} must be a positive integer`, { pointer: name });
  return n;
}

/** Reads `page` and `per_page` from a query; a per_page above the maximum is clamped, as the hosted API does. */
export function readPage(query: Record<string, unknown>, opts: PageOptions): PageRequest {
  const code = opts.code ?? Codes.validation;
  const page = positiveInt(query.page, "page", code) ?? 1;
  let perPage = positiveInt(query.per_page, "per_page", code) ?? opts.defaultPerPage;
  perPage = Math.min(Math.max(perPage, opts.minPerPage ?? 1), opts.maxPerPage);
  return { page, perPage, offset: (page - 1) * perPage };
}

/** A complete result_info: clients stop on an empty page, on total_pages, or on count < per_page; all must agree. */
export function resultInfo(req: PageRequest, count: number, totalCount: number): ResultInfo {
  return {
    page: req.page,
    per_page: req.perPage,
    count,
    total_count: totalCount,
    total_pages: Math.max(1, Math.ceil(totalCount / req.perPage)),
  };
}

/** Slice an in-memory list into one page. */
export function pageOf<T>(items: readonly T[], req: PageRequest): { result: T[]; result_info: ResultInfo } {
  const result = items.slice(req.offset, req.offset + req.perPage);
  return { result, result_info: resultInfo(req, result.length, items.length) };
}
