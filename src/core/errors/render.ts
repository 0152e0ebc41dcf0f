import type { ServerResponse } from "node:http";
import { Codes, EdgeError } from "../errors.js";
import { dependencyRefusal } from "./dependency.js";
import { failure } from "../http/envelope.js";

/**
 * The one place that turns a refusal (an EdgeError) into what each surface shows: a v4 envelope for the API, the
 * error reply a workerd binding expects, one line for the CLI. Areas never format a refusal themselves.
 */

/** The v4 failure envelope: `{success: false, errors, messages: [], result: null}` plus any extra fields. */
export function toEnvelope(err: EdgeError): ReturnType<typeof failure> {
  return failure(err.errors, err.extra);
}

/** The workerd binding protocols the binding server speaks; each reports errors its own way. */
export type BindingProtocol = "kv" | "r2";

/** A complete HTTP answer for a binding call: status, optional reason phrase, headers and body. */
export interface BindingReply {
  status: number;
  /** The HTTP reason phrase; workerd's KV binding shows it to the script (`KV GET failed: 404 <reason>`). */
  reason?: string;
  headers: Record<string, string | number>;
  body: Buffer;
}

/** Header-safe JSON: non-ASCII becomes \u escapes (header values must be latin1). */
const asciiJson = (v: unknown) => JSON.stringify(v).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);

/**
 * The error reply of a binding call. `err` that is not an EdgeError is a bug (the caller logs it): KV answers a
 * plain 500; R2 answers `internal`, the area's own internal refusal, because workerd reads an R2 error's code.
 * - kv: the status, the message as the reason phrase (one line of printable ASCII, workerd shows it to the
 *   script), the v4 envelope's `{success, errors}` as a text body.
 * - r2: the status, `cf-r2-error: {"version":1,"v4code":<code>,"message":...}` (what workerd turns into the
 *   script's exception) and the same JSON as the body.
 */
export function toBindingReply(err: unknown, protocol: BindingProtocol, internal?: () => EdgeError): BindingReply {
  // PostgreSQL or the object store being away is a 503 for a worker's binding call too, not a bug of ours.
  err = dependencyRefusal(err) ?? err;
  if (protocol === "r2") {
    const e = err instanceof EdgeError ? err : (internal?.() ?? new EdgeError(500, Codes.internal, "internal error"));
    return { status: e.status, headers: { "cf-r2-error": r2ErrorHeader(e), "content-type": "application/json" }, body: Buffer.from(r2ErrorJson(e)) };
  }
  if (!(err instanceof EdgeError)) return textReply(500, "internal error", "Internal Server Error");
  // Reason phrases must be one line of latin1; keep the message readable within that.
  const reason = err.message.replace(/[^\x20-\x7e]/g, "?").slice(0, 200);
  return textReply(err.status, JSON.stringify({ success: false, errors: err.errors }), reason);
}

const r2ErrorJson = (err: EdgeError) => JSON.stringify({ version: 1, v4code: err.errors[0]?.code, message: err.message });

/** The `cf-r2-error` header value for `err`; R2 also sends it beside metadata (a 412 carries the object). */
export const r2ErrorHeader = (err: EdgeError): string => asciiJson({ version: 1, v4code: err.errors[0]?.code, message: err.message });

function textReply(status: number, text: string, reason?: string): BindingReply {
  const body = Buffer.from(text, "utf8");
  return { status, reason, headers: { "content-type": "text/plain; charset=utf-8" }, body };
}

/** Writes a binding reply; when an answer has already started, the connection is cut instead (workerd sees an error). */
export function sendBindingReply(res: ServerResponse, reply: BindingReply): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (reply.reason) res.statusMessage = reply.reason;
  res.writeHead(reply.status, { ...reply.headers, "content-length": reply.body.length });
  res.end(reply.body);
}

/**
 * A refusal as the CLI prints it: each error's message with its code, one per line (the CLI adds `✘ [ERROR]` and
 * exits 1). The same words whether the refusal came over the API or from a store opened with --local.
 */
export function toCliMessage(err: Pick<EdgeError, "errors">): string {
  // The chain holds the server's reason ("Invalid request headers" alone does not say which header, or why).
  return err.errors
    .map((e) =>
      [`${e.message} [code: ${e.code}]`, ...(Array.isArray(e.error_chain) ? e.error_chain : []).map((c) => `  ${c.message} [code: ${c.code}]`)].join("\n"),
    )
    .join("\n");
}
