/** The CLI's one logger. Data goes to stdout through `out`; people-facing notes, warnings and errors here. */
export interface CliLogger {
  /** A progress or status line on stdout. */
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export function colorEnabled(stream: NodeJS.WriteStream, env: NodeJS.ProcessEnv): boolean {
  return Boolean(stream.isTTY) && !env.NO_COLOR && env.TERM !== "dumb";
}

export function createCliLogger(stdout: NodeJS.WritableStream, stderr: NodeJS.WriteStream, env: NodeJS.ProcessEnv): CliLogger {
  const color = colorEnabled(stderr, env);
  const paint = (code: number, s: string) => (color ? `\x1b[${code}m${s}\x1b[0m` : s);
  const indent = (s: string) => s.replace(/\n/g, "\n  ");
  return {
    info: (m) => void stdout.write(`${m}\n`),
    warn: (m) => void stderr.write(`${paint(33, "▲ [WARNING]")} ${indent(m)}\n\n`),
    error: (m) => void stderr.write(`${paint(31, "✘ [ERROR]")} ${indent(m)}\n\n`),
  };
}
