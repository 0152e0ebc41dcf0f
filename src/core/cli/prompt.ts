import { createInterface } from "node:readline";
import { Writable } from "node:stream";

export interface PromptIO {
  stdin: NodeJS.ReadStream;
  stdout: NodeJS.WriteStream;
  interactive: boolean;
}

/** Asks a yes/no question on a terminal; without one, says so and takes the fallback. */
export async function confirm(io: PromptIO, question: string, fallback = true): Promise<boolean> {
  if (!io.interactive) {
    io.stdout.write(`? ${question}\n🤖 Using fallback value in non-interactive context: ${fallback ? "yes" : "no"}\n`);
    return fallback;
  }
  const rl = createInterface({ input: io.stdin, output: io.stdout });
  try {
    const answer: string = await new Promise((res) => rl.question(`? ${question} (y/n) `, res));
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    rl.close();
  }
}

/** Reads one line from a terminal without echoing it (for secrets). */
export async function promptHidden(io: PromptIO, question: string): Promise<string> {
  const muted = new Writable({ write: (_c, _e, cb) => cb() });
  // The interface puts the terminal in raw mode (no echo) when created: only then ask, so nothing typed early is echoed.
  const rl = createInterface({ input: io.stdin, output: muted, terminal: true });
  io.stdout.write(`${question} `);
  try {
    const answer: string = await new Promise((res) => rl.question("", res));
    io.stdout.write("\n");
    return answer;
  } finally {
    rl.close();
  }
}

export async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(typeof c === "string" ? Buffer.from(c) : (c as Buffer));
  return Buffer.concat(chunks);
}
