import type { IncomingMessage, ServerResponse } from "node:http";
import { sendBindingError, statusText, textReply, type BindingErrorFormat } from "../core/errors/render.js";
import { readBody } from "../core/http/body.js";
import { parseUserJson } from "../core/http/json-input.js";
import type { Logger } from "../core/logger.js";
import { QueuesCodes, QueuesErrors } from "./errors.js";
import { QUEUES_LIMITS } from "./limits.js";
import { contentTypeOf, delayOf, type Producer } from "./producer.js";
import type { NewMessage, QueuesStore } from "./store.js";

export interface QueueBindingTarget {
  accountId: string;
  queueName: string;
}

export type QueueBindingHandler = (target: QueueBindingTarget, req: IncomingMessage, res: ServerResponse) => void;

/** Room for the JSON and base64 around a full batch. */
const BATCH_BODY_LIMIT = Math.ceil((QUEUES_LIMITS.batchBytes * 4) / 3) + QUEUES_LIMITS.batchMessages * 128 + 1024;

/**
 * Serves the protocol of workerd's queue binding (`env.Q.send`, `sendBatch`, `metrics`): `POST /message` with the
 * serialized body (`X-Msg-Fmt` its content type, none meaning v8; `X-Msg-Delay-Secs`), `POST /batch` with
 * `{messages: [{body: <base64>, contentType?, delaySecs?}]}`, `GET /metrics`; each answers the queue's metrics.
 * workerd shows a refusal's status text to the script (`Queue send failed: <text>`), or the
 * `CF-Queues-Error-Cause` header with the queue_expose_error_codes flag, so both carry our message. The binding
 * server has decided the account from the header workerd injects; the queue is looked up by name in that account
 * only, so a script can never reach another account's queue.
 */
export function createQueueBindingHandler(store: QueuesStore, producer: Producer, log: Logger): QueueBindingHandler {
  return (target, req, res) => {
    handle(store, producer, target, req, res).catch((err: unknown) => sendBindingError(res, err, QUEUE_BINDING_ERRORS, log, { what: "queue binding call" }));
  };
}

/**
 * How workerd's queue binding reads a failed call: the status with the message as its status text (one line of
 * visible ASCII: `Queue send failed: <text>`), the same text in `cf-queues-error-cause` (shown with the
 * queue_expose_error_codes flag) and the code in `cf-queues-error-code`.
 */
export const QUEUE_BINDING_ERRORS: BindingErrorFormat = {
  refusal(err) {
    const text = statusText(err.message, 300);
    const code = String(err.errors[0]?.code ?? QueuesCodes.internal);
    return textReply(err.status, `${text}\n`, text, { "cf-queues-error-code": code, "cf-queues-error-cause": text }, "text/plain");
  },
  bug: () => QUEUE_BINDING_ERRORS.refusal(QueuesErrors.internal()),
};

async function handle(store: QueuesStore, producer: Producer, target: QueueBindingTarget, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = new URL(req.url ?? "/", "http://queue").pathname;
  const route = `${req.method} ${path}`;
  if (route !== "POST /message" && route !== "POST /batch" && route !== "GET /metrics") {
    req.resume();
    throw QueuesErrors.body(`${route} is not part of the queue binding protocol`);
  }
  const queue = await store.getQueueByName(target.accountId, target.queueName);
  if (!queue) {
    req.resume();
    throw QueuesErrors.queueNamed(target.queueName);
  }
  const header = (name: string) => {
    const v = req.headers[name];
    return typeof v === "string" ? v : undefined;
  };
  if (route === "POST /message") {
    const body = await readBody(req, QUEUES_LIMITS.messageBytes, () => QueuesErrors.messageTooLarge());
    await producer.send(queue, [{ body, contentType: contentTypeOf(header("x-msg-fmt"), "v8"), delaySeconds: delayOf(header("x-msg-delay-secs")) }]);
  } else if (route === "POST /batch") {
    const raw = await readBody(req, BATCH_BODY_LIMIT, () => QueuesErrors.batchTooLarge());
    const batchDelay = delayOf(header("x-msg-delay-secs"));
    await producer.send(queue, batchMessages(parseUserJson(raw), batchDelay));
  } else {
    req.resume();
  }
  const stats = await store.stats(queue.queue_id, Date.now());
  const metrics = { backlogCount: stats.backlog, backlogBytes: stats.backlogBytes, oldestMessageTimestamp: stats.oldestSentAtMs ?? 0 };
  const answer = Buffer.from(JSON.stringify(route === "GET /metrics" ? metrics : { metadata: { metrics } }));
  res.writeHead(200, { "content-type": "application/json", "content-length": answer.length }).end(answer);
}

function batchMessages(body: unknown, batchDelay: number | undefined): NewMessage[] {
  const list = (body as { messages?: unknown } | null)?.messages;
  if (!Array.isArray(list)) throw QueuesErrors.body("a batch is {messages: [...]}");
  if (list.length > QUEUES_LIMITS.batchMessages) throw QueuesErrors.batchTooLarge();
  return list.map((m: unknown) => {
    const o = m as { body?: unknown; contentType?: unknown; delaySecs?: unknown } | null;
    if (typeof o !== "object" || o === null || typeof o.body !== "string") throw QueuesErrors.body("each message needs a base64 body");
    if (o.contentType !== undefined && typeof o.contentType !== "string") throw QueuesErrors.body("contentType must be a string");
    return {
      body: Buffer.from(o.body, "base64"),
      contentType: contentTypeOf(o.contentType as string | undefined, "v8"),
      delaySeconds: delayOf(o.delaySecs) ?? batchDelay,
    };
  });
}
