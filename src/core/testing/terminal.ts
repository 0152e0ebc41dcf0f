import { spawn, spawnSync } from "node:child_process";
import { CLI_PATH } from "./platform.js";

/** util-linux `script` gives a command a pseudo-terminal; tests that need one skip without it. */
export const terminalAvailable = (): boolean => spawnSync("script", ["--version"]).status === 0;

export interface TerminalOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Text typed into the terminal once `prompt` shows on the screen, in order. */
  answers?: { prompt: RegExp | string; text: string }[];
}

const shellQuote = (a: string) => `'${a.replace(/'/g, "'\\''")}'`;

/**
 * Runs the real `edgecli` on a pseudo-terminal, as a person at a terminal would (prompts, hidden input,
 * progress bars), typing the answers when their prompts appear. Returns the exit code and what the screen showed.
 */
export function runOnTerminal(args: string[], opts: TerminalOptions = {}): Promise<{ code: number | null; screen: string }> {
  return new Promise((resolve, reject) => {
    const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: "1", ...opts.env };
    delete env.CI; // CI means "nobody to ask": the terminal tests are about the person who is there
    const command = [process.execPath, CLI_PATH, ...args].map(shellQuote).join(" ");
    const child = spawn("script", ["-qec", command, "/dev/null"], { cwd: opts.cwd, env, stdio: ["pipe", "pipe", "pipe"] });
    const answers = [...(opts.answers ?? [])];
    let screen = "";
    const onData = (d: Buffer) => {
      screen += d.toString();
      const next = answers[0];
      if (next && (typeof next.prompt === "string" ? screen.includes(next.prompt) : next.prompt.test(screen))) {
        answers.shift();
        child.stdin.write(next.text);
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, screen }));
  });
}
