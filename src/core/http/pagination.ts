import { Codes, CoreErrors } from "../errors.js";
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

/** A whole number written in decimal digits (a JSON client may also send a number), or undefined when absent. */
function wholeNumber(raw: unknown, name: string, code: number, rule: string): number | undefined {
  if (raw === undefined || raw === "") return undefined;
  const n = typeof raw === "number" ? raw : typeof raw === "string" && /^[0-9]+$/.test(raw) ? Number(raw) : NaN;
  if (!(Number.isInteger(n) || n === Infinity) || n < 1) throw CoreErrors.invalidInput(`${name} must be ${rule}`, { code, pointer: name });
  return n;
}

const PAGE_RULE = `a positive integer no larger than ${Number.MAX_SAFE_INTEGER}`;

/** Reads `page` and `per_page` from a query; a per_page above the maximum is clamped, as the hosted API does. */
export function readPage(query: Record<string, unknown>, opts: PageOptions): PageRequest {
  const code = opts.code ?? Codes.validation;
  const page = wholeNumber(query.page, "page", code, PAGE_RULE) ?? 1;
  // Past 2^53 - 1 page numbers cannot be told apart once read (99999999999999999999 reads as 1e20): refused, not rounded.
  if (!Number.isSafeInteger(page)) throw CoreErrors.invalidInput(`page must be ${PAGE_RULE}`, { code, pointer: "page" });
  let perPage = wholeNumber(query.per_page, "per_page", code, "a positive integer") ?? opts.defaultPerPage;
  perPage = Math.min(Math.max(perPage, opts.minPerPage ?? 1), opts.maxPerPage);
  // Stores bind the offset as an SQLite integer (at most 2^63 - 1), and (page - 1) * per_page can pass that.
  // No list holds 2^53 items, so a clamped offset still lands past the end and the page is empty.
  return { page, perPage, offset: Math.min((page - 1) * perPage, Number.MAX_SAFE_INTEGER) };
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
