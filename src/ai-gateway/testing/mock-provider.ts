import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** What the mock saw of one request. */
interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface MockProvider {
  /** Base URL to give the gateway, e.g. http://127.0.0.1:1234/v1 */
  url: string;
  requests: SeenRequest[];
  /** Status the next `n` requests get instead of an answer (to test retries and fallbacks). */
  failNext(n: number, status?: number): void;
  /**
   * Makes the next streamed answer stop after its first chunk until the returned function is called,
   * so a test can prove the first chunk got through before the provider finished. `abandoned` settles
   * when the gateway drops the held answer (its client went away).
   */
  holdNextStream(): { release: () => void; abandoned: Promise<void> };
  /**
   * Holds the next answer back until the returned function is called (to test request timeouts without betting on
   * how fast a loaded machine is).
   */
  holdNextAnswer(): () => void;
  close(): Promise<void>;
}

/**
 * A stand-in for an OpenAI-compatible provider (the internet is the one thing tests may not use):
 * `POST …/chat/completions` answers JSON, or SSE chunks ending with a usage event and [DONE] when
 * `stream: true`; the answer echoes the last user message. Any other path answers 404.
 */
export async function startMockProvider(opts: { chunks?: number } = {}): Promise<MockProvider> {
  const requests: SeenRequest[] = [];
  let failing = 0;
  let failStatus = 500;
  let held: Promise<void> | undefined;
  let hold: { gate: Promise<void>; onAbandon: () => void } | undefined;
  const chunks = opts.chunks ?? 3;
  const server: Server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on("data", (c: Buffer) => parts.push(c));
    req.on("end", () => {
      if (held) {
        const gate = held;
        held = undefined;
        void gate.then(answer);
      } else answer();
    });
    const answer = () => {
      const body = Buffer.concat(parts).toString("utf8");
      requests.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      if (failing > 0) {
        failing--;
        res.writeHead(failStatus, { "content-type": "application/json" });
        return res.end(JSON.stringify({ error: { message: "mock failure", type: "server_error" } }));
      }
      if (!req.url!.split("?")[0].endsWith("/chat/completions")) {
        res.writeHead(404, { "content-type": "application/json" });
        return res.end(JSON.stringify({ error: { message: `no route ${req.url}` } }));
      }
      let parsed: { model?: string; stream?: boolean; messages?: { content?: string }[]; stream_options?: { include_usage?: boolean } } = {};
      try {
        parsed = JSON.parse(body);
        // As the real API does, a body that is JSON but not an object is refused (the fuzzer sends `null`, `[]`...).
        if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw new TypeError("not an object");
        if (parsed.messages !== undefined && !Array.isArray(parsed.messages)) throw new TypeError("messages is not a list");
      } catch {
        res.writeHead(400, { "content-type": "application/json" });
        return res.end(JSON.stringify({ error: { message: "bad json" } }));
      }
      const model = parsed.model ?? "mock-model";
      const text = `echo: ${parsed.messages?.at(-1)?.content ?? ""}`;
      const usage = {
        prompt_tokens: 11,
        completion_tokens: 7,
        total_tokens: 18,
        prompt_tokens_details: { cached_tokens: 2 },
        completion_tokens_details: { reasoning_tokens: 3 },
      };
      const id = `chatcmpl-${requests.length}`;
      const created = Math.floor(Date.now() / 1000);
      if (!parsed.stream) {
        res.writeHead(200, { "content-type": "application/json", "x-mock": "1" });
        return res.end(
          JSON.stringify({
            id,
            object: "chat.completion",
            created,
            model,
            choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }],
            usage,
          }),
        );
      }
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      const pieces = Array.from({ length: chunks }, (_, i) => (i === 0 ? text : ` ${i}`));
      const chunk = (p: string) =>
        `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [{ index: 0, delta: { content: p }, finish_reason: null }] })}\n\n`;
      const gate = hold;
      hold = undefined;
      if (gate) {
        res.once("close", () => {
          if (!res.writableFinished) gate.onAbandon();
        });
        res.write(chunk(pieces.shift()!));
        return void gate.gate.then(() => {
          if (!res.destroyed) finish();
        });
      }
      finish();
      function finish() {
        for (const p of pieces) res.write(chunk(p));
        res.write(
          `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [{ index: 0, delta: {}, finish_reason: "stop" }] })}\n\n`,
        );
        if (parsed.stream_options?.include_usage)
          res.write(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [], usage })}\n\n`);
        res.end("data: [DONE]\n\n");
      }
    };
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    failNext(n, status = 500) {
      failing = n;
      failStatus = status;
    },
    holdNextStream() {
      let release!: () => void;
      let onAbandon!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      const abandoned = new Promise<void>((r) => (onAbandon = r));
      hold = { gate, onAbandon };
      return { release, abandoned };
    },
    holdNextAnswer() {
      let release!: () => void;
      held = new Promise<void>((r) => (release = r));
      return release;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
