import type { ServerResponse } from "node:http";
import { Codes, EdgeError } from "../errors.js";
import { dependencyRefusal } from "./dependency.js";
import { failure } from "../http/envelope.js";

/**
 * The one place that turns a refusal (an EdgeError) into what each surface shows: a v4 envelope for the API, one
 * line for the CLI, and the error reply of a workerd binding, in the wire format its area declares
 * (BindingErrorFormat). Areas never write a refusal out themselves: they declare their format and render through
 * these helpers.
 */

/** The v4 failure envelope: `{success: false, errors, messages: [], result: null}` plus any extra fields. */
export function toEnvelope(err: EdgeError): ReturnType<typeof failure> {
  return failure(err.errors, err.extra);
}

/** A complete HTTP answer for a binding call: status, optional reason phrase, headers and body. */
export interface BindingReply {
  status: number;
  /** The HTTP reason phrase; workerd's KV and queue bindings show it to the script (`KV GET failed: 404 <reason>`). */
  reason?: string;
  headers: Record<string, string | number>;
  body: Buffer;
}

/**
 * How one workerd binding protocol reports a failed call: its wire format, declared by the area whose binding it
 * is (kv/binding.ts, r2/binding.ts, queues/binding.ts, d1/binding.ts) and applied here, so every binding renders
 * through the same helper (toBindingReply, sendBindingError) and none writes an error reply by hand.
 */
export interface BindingErrorFormat {
  /** The reply of a refusal. */
  refusal(err: EdgeError): BindingReply;
  /** The reply of a bug (an error that is no EdgeError; sendBindingError has logged it). */
  bug(): BindingReply;
}

/**
 * The error reply of a binding call in the area's format. PostgreSQL or the object store being away is a refusal
 * (503) for a worker's binding call too, not a bug of ours.
 */
export function toBindingReply(err: unknown, format: BindingErrorFormat): BindingReply {
  err = dependencyRefusal(err) ?? err;
  return err instanceof EdgeError ? format.refusal(err) : format.bug();
}

/**
 * Answers a failed binding call in the area's format: a bug is logged first (with `context`), a refusal is not;
 * when the answer has already started, the connection is cut instead (workerd sees an error).
 */
export function sendBindingError(
  res: ServerResponse,
  err: unknown,
  format: BindingErrorFormat,
  log?: { error(obj: object, msg: string): void },
  context: { what: string } & Record<string, unknown> = { what: "binding call" },
): void {
  const reply = toBindingReply(err, format);
  const refused = dependencyRefusal(err) ?? err;
  if (log && !(refused instanceof EdgeError)) {
    const { what, ...fields } = context;
    log.error({ err, ...fields }, `${what} failed`);
  }
  sendBindingReply(res, reply);
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

/** Pieces the areas' formats are made of. */

/** Header-safe JSON: non-ASCII becomes \u escapes (header values must be latin1). */
export const asciiJson = (v: unknown) => JSON.stringify(v).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);

/** A message as one line of visible ASCII, at most `max` characters: a reason phrase or header value workerd shows. */
export const statusText = (message: string, max: number) => message.replace(/[^\x20-\x7e]/g, "?").slice(0, max);

/** A reply whose body is `text` (UTF-8). */
export function textReply(
  status: number,
  text: string,
  reason?: string,
  headers: Record<string, string> = {},
  contentType = "text/plain; charset=utf-8",
): BindingReply {
  return { status, reason, headers: { "content-type": contentType, ...headers }, body: Buffer.from(text, "utf8") };
}

/** A reply whose body is `body` as JSON. */
export function jsonReply(status: number, body: unknown, headers: Record<string, string> = {}): BindingReply {
  return { status, headers: { "content-type": "application/json", ...headers }, body: Buffer.from(JSON.stringify(body)) };
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
