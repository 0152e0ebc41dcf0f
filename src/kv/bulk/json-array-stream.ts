import { JSONParser } from "@streamparser/json";
import { CoreErrors, EdgeError } from "../../core/errors.js";
import { checkUserValue, MAX_JSON_DEPTH } from "../../core/http/json-input.js";
import { KvErrors } from "../errors.js";

/**
 * After a malformed or oversized body, how much more of it is read (and dropped) before answering. Many HTTP
 * clients do not read a response until they finish sending, so answering at once would show them a reset instead
 * of the error. Past this the reading stops and the connection is cut short.
 */
const DRAIN_BYTES = 32 * 1024 * 1024;

const isWhitespace = (b: number) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;

/**
 * The elements of the JSON array a request body carries, each parsed as soon as its last byte arrives: memory holds
 * one element and the parser's buffer, never the whole body. @streamparser/json does the parsing (invalid UTF-8 is an
 * error); each element then obeys the rules of every user JSON (checkUserValue: depth, no `__proto__` keys). Throws
 * EdgeError: 413 past `limitBytes`, 400 when the body is not one JSON array (or there is no body). Backend-neutral:
 * the bulk write and bulk delete routes both read their bodies through it.
 */
export async function* jsonArrayElements(chunks: AsyncIterable<Uint8Array> | undefined, limitBytes: number): AsyncGenerator<unknown, void, undefined> {
  if (!chunks) throw notAnArray();
  const parser = new JSONParser({ paths: ["$.*"], keepStack: false });
  let ready: unknown[] = [];
  let rejected: unknown;
  parser.onValue = ({ value }) => {
    try {
      checkUserValue(value, MAX_JSON_DEPTH - 1); // the array around the elements is one level
    } catch (e) {
      rejected ??= e;
    }
    ready.push(value);
  };
  const iterator = chunks[Symbol.asyncIterator]();
  let size = 0;
  let started = false;
  try {
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
      const chunk = next.value;
      size += chunk.length;
      if (size > limitBytes) throw tooLarge();
      if (!started) {
        const first = chunk.findIndex((b) => !isWhitespace(b));
        if (first < 0) continue;
        if (chunk[first] !== 0x5b /* [ */) throw notAnArray();
        started = true;
      }
      try {
        parser.write(chunk);
      } catch (e) {
        throw malformed(e);
      }
      if (rejected) throw malformed(rejected);
      if (ready.length) {
        const parsed = ready;
        ready = [];
        yield* parsed;
      }
    }
    if (!started) throw notAnArray();
    if (!parser.isEnded) {
      try {
        parser.end();
      } catch (e) {
        throw malformed(e);
      }
      if (rejected) throw malformed(rejected);
    }
  } catch (err) {
    if (!(err instanceof EdgeError)) throw err;
    for (let next = await iterator.next(); !next.done && size <= limitBytes + DRAIN_BYTES; next = await iterator.next()) size += next.value.length;
    throw err;
  }
}

const notAnArray = KvErrors.bodyNotArray;
const tooLarge = CoreErrors.bodyTooLarge;
const malformed = (e: unknown) => CoreErrors.malformedJson((e as Error).message);
