import { Client } from "undici";
import type { LeasedMessage, QueueOutcome } from "../../queues/service.js";
import { capnpString } from "./capnp-string.js";

/**
 * How a batch reaches a script's queue() handler: through workerd's own queue event, so `batch.messages`,
 * `message.ack()/retry()`, `batch.ackAll()/retryAll()`, `attempts` and the v8-serialized bodies of `send()` are
 * workerd's, not an imitation. workerd starts a queue event from a service binding's `queue()` method
 * (`Fetcher.queue`, the way Miniflare delivers too), which needs the experimental compatibility flag
 * `service_binding_extra_handlers` on the worker that calls it: a small dispatcher worker in the script's process,
 * on its own socket ("queue"), bound to the script. The user's worker does not get the flag, and its env does not
 * change. The platform POSTs the batch there as JSON; the answer is workerd's result of the event.
 */
const DISPATCHER = `export default {
  async fetch(request, env) {
    const { queue, messages } = await request.json();
    const text = (bytes) => new TextDecoder().decode(bytes);
    const batch = messages.map((m) => {
      const bytes = Uint8Array.from(atob(m.body), (c) => c.charCodeAt(0));
      const base = { id: m.id, timestamp: new Date(m.timestampMs), attempts: m.attempts };
      if (m.contentType === "v8") return { ...base, serializedBody: bytes };
      if (m.contentType === "json") return { ...base, body: JSON.parse(text(bytes)) };
      if (m.contentType === "text") return { ...base, body: text(bytes) };
      return { ...base, body: bytes };
    });
    return Response.json(await env.script.queue(queue, batch));
  },
};
`;

/** The dispatcher's service in a script's workerd config (see workerdConfig). */
export function queueDispatchService(): string {
  return `(name = "queue-dispatch", worker = (modules = [(name = "dispatch.js", esModule = ${capnpString(DISPATCHER)})], compatibilityDate = "2024-09-01", compatibilityFlags = ["service_binding_extra_handlers"], bindings = [(name = "script", service = "main")]))`;
}

/** The socket the platform sends batches to. */
export const QUEUE_SOCKET = `(name = "queue", http = (), service = "queue-dispatch")`;

/** The largest answer read back: workerd's result names each message at most twice. */
const ANSWER_MAX_BYTES = 256 * 1024;

/** Runs the script's queue() on `messages` of `queueName` through the dispatcher's socket; rejects on no sensible answer in time. */
export async function runQueueOn(socketPath: string, queueName: string, messages: readonly LeasedMessage[], timeoutMs: number): Promise<QueueOutcome> {
  const client = new Client("http://workerd", { socketPath, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
  try {
    const body = JSON.stringify({
      queue: queueName,
      messages: messages.map((m) => ({
        id: m.id,
        timestampMs: m.timestampMs,
        attempts: m.attempts,
        contentType: m.contentType,
        body: m.body.toString("base64"),
      })),
    });
    const res = await client.request({
      method: "POST",
      path: "/",
      headers: { "content-type": "application/json" },
      body,
      signal: AbortSignal.timeout(timeoutMs),
    });
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of res.body as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > ANSWER_MAX_BYTES) throw new Error("the queue dispatcher's answer is too large");
      chunks.push(chunk);
    }
    if (res.statusCode !== 200) throw new Error(`the queue dispatcher answered ${res.statusCode}: ${Buffer.concat(chunks).toString("utf8").slice(0, 200)}`);
    return outcomeOf(JSON.parse(Buffer.concat(chunks).toString("utf8")));
  } finally {
    await client.destroy();
  }
}

/** workerd's queue result, checked field by field (the dispatcher runs in the script's process). */
function outcomeOf(r: unknown): QueueOutcome {
  const o = (r ?? {}) as Record<string, unknown>;
  const strings = (v: unknown) => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);
  const delay = (v: unknown) => (typeof v === "number" && Number.isInteger(v) && v >= 0 ? v : undefined);
  const batch = (o.retryBatch ?? {}) as Record<string, unknown>;
  return {
    outcome: typeof o.outcome === "string" ? o.outcome : "exception",
    ackAll: o.ackAll === true,
    retryBatch: { retry: batch.retry === true, delaySeconds: delay(batch.delaySeconds) },
    explicitAcks: strings(o.explicitAcks),
    retryMessages: (Array.isArray(o.retryMessages) ? o.retryMessages : []).flatMap((m: unknown) => {
      const x = (m ?? {}) as Record<string, unknown>;
      return typeof x.msgId === "string" ? [{ msgId: x.msgId, delaySeconds: delay(x.delaySeconds) }] : [];
    }),
  };
}
