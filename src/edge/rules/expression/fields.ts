import type { RuleRequest } from "../../ports.js";

/** The fields of the hosted Rules language an expression may name here (all strings). */
export const FIELDS = [
  "http.host",
  "http.request.uri.path",
  "http.request.uri.path.extension",
  "http.request.uri.query",
  "http.request.method",
  "http.request.full_uri",
] as const;

export type FieldName = (typeof FIELDS)[number];

const FIELD_SET: ReadonlySet<string> = new Set(FIELDS);
export const isField = (name: string): name is FieldName => FIELD_SET.has(name);

/**
 * A request's field values as rules read them. Built once per request and read by every rule; the two derived fields
 * (the extension and the full URI) are computed the first time a rule reads them, so zones whose rules never name them
 * pay nothing.
 */
export class RequestFields {
  private extension?: string;
  private fullUri?: string;

  constructor(readonly request: RuleRequest) {}

  value(field: FieldName): string {
    const r = this.request;
    switch (field) {
      case "http.host":
        return r.host;
      case "http.request.uri.path":
        return r.path;
      case "http.request.uri.query":
        return r.query;
      case "http.request.method":
        return r.method;
      case "http.request.uri.path.extension":
        return (this.extension ??= extensionOf(r.path));
      case "http.request.full_uri":
        return (this.fullUri ??= `${r.scheme}://${r.host}${r.path}${r.query === "" ? "" : `?${r.query}`}`);
    }
  }
}

/**
 * As hosted: the lowercased extension of the path's last segment, without its dot ("" when it has none), so
 * `/a/Photo.JPG` is `jpg` and `/a.b/c` is "".
 */
export function extensionOf(path: string): string {
  const slash = path.lastIndexOf("/");
  const dot = path.lastIndexOf(".");
  return dot > slash ? path.slice(dot + 1).toLowerCase() : "";
}
