// A minimal OpenAI-compatible upstream for the benchmark, in its own process so it never shares an event
// loop with the load generator. JSON answers, or SSE with CHUNKS chunks plus a usage event when stream:true.
import { createServer } from "node:http";

const CHUNKS = Number(process.env.CHUNKS ?? 20);
const usage = { prompt_tokens: 11, completion_tokens: CHUNKS, total_tokens: 11 + CHUNKS };
const json = JSON.stringify({
  id: "chatcmpl-bench",
  object: "chat.completion",
  created: 1,
  model: "gpt-4o-mini",
  choices: [{ index: 0, message: { role: "assistant", content: "Hello from the bench upstream." }, finish_reason: "stop" }],
  usage,
});
const chunk = (i) =>
  `data: ${JSON.stringify({ id: "chatcmpl-bench", object: "chat.completion.chunk", created: 1, model: "gpt-4o-mini", choices: [{ index: 0, delta: { content: `tok${i} ` }, finish_reason: null }] })}\n\n`;
const sseBody = Array.from({ length: CHUNKS }, (_, i) => chunk(i));
const tail = `data: ${JSON.stringify({ id: "chatcmpl-bench", object: "chat.completion.chunk", created: 1, model: "gpt-4o-mini", choices: [], usage })}\n\ndata: [DONE]\n\n`;

const server = createServer((req, res) => {
  const parts = [];
  req.on("data", (c) => parts.push(c));
  req.on("end", () => {
    const stream = Buffer.concat(parts).includes('"stream":true');
    if (!stream) {
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(json) });
      return res.end(json);
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    for (const c of sseBody) res.write(c);
    res.end(tail);
  });
});
server.keepAliveTimeout = 65_000;
server.listen(0, "127.0.0.1", () => process.stdout.write(`${server.address().port}\n`));
