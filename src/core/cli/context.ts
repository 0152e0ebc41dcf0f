import { UserError } from "../errors.js";
import { ApiClient, resolveApiTarget } from "./api-client.js";
import { loadProjectConfig, type ProjectConfig } from "./config-file.js";
import { createCliLogger, type CliLogger } from "./logger.js";
import { createProgress, type Progress } from "./progress.js";
import { confirm, promptHidden, readAll } from "./prompt.js";

export interface CliIO {
  stdin: NodeJS.ReadStream;
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
  env: NodeJS.ProcessEnv;
  cwd: string;
}

/** What a command handler can use: output, the logger, config, the API client, prompts. */
export class CliContext {
  readonly log: CliLogger;
  private apiClient?: ApiClient;
  private configCache = new Map<string, Promise<ProjectConfig | undefined>>();

  constructor(
    readonly io: CliIO,
    /** The global --config flag. */
    readonly configPath?: string,
  ) {
    this.log = createCliLogger(io.stdout, io.stderr, io.env);
  }

  get env(): NodeJS.ProcessEnv {
    return this.io.env;
  }
  get cwd(): string {
    return this.io.cwd;
  }
  /** True when a person can answer prompts: stdin and stdout are terminals and this is not CI. */
  get interactive(): boolean {
    return Boolean(this.io.stdin.isTTY && this.io.stdout.isTTY) && !this.io.env.CI;
  }

  /** Writes data (not a message) to stdout, unchanged. */
  write(data: string | Uint8Array): void {
    this.io.stdout.write(data);
  }
  json(value: unknown): void {
    this.io.stdout.write(JSON.stringify(value, null, 2) + "\n");
  }

  config(env?: string): Promise<ProjectConfig | undefined> {
    const key = env ?? "";
    let p = this.configCache.get(key);
    if (!p) {
      p = loadProjectConfig({ cwd: this.cwd, configPath: this.configPath, env });
      this.configCache.set(key, p);
    }
    return p;
  }

  api(): ApiClient {
    return (this.apiClient ??= new ApiClient(resolveApiTarget(this.env, this.cwd)));
  }

  /** The account to act on (see ApiClient.accountId), honouring account_id in the config. */
  async accountId(env?: string): Promise<string> {
    const cfg = await this.config(env).catch(() => undefined);
    return this.api().accountId(cfg?.account_id);
  }

  /**
   * Asks before something that cannot be undone. `skip` is the command's own "do not ask" flag: given, nothing is
   * asked. Without a terminal nobody can answer, so every destructive command refuses the same way (stderr, exit 1)
   * instead of taking a default that differs from command to command. False: the person at the terminal said no.
   */
  async confirmDestructive(question: string, skip: { given: boolean | undefined; flag: string }): Promise<boolean> {
    if (skip.given) return true;
    if (!this.interactive) {
      throw new UserError(`${question}\nNot without confirmation, and there is no terminal to ask on: pass ${skip.flag} to go ahead.`);
    }
    return confirm({ stdin: this.io.stdin, stdout: this.io.stdout, interactive: true }, question, false);
  }

  /** A yes/no question that is not about destroying anything; without a terminal, `fallback` is taken (and shown). */
  confirm(question: string, fallback = true): Promise<boolean> {
    return confirm({ stdin: this.io.stdin, stdout: this.io.stdout, interactive: this.interactive }, question, fallback);
  }

  promptHidden(question: string): Promise<string> {
    return promptHidden({ stdin: this.io.stdin, stdout: this.io.stdout, interactive: true }, question);
  }

  readStdin(): Promise<Buffer> {
    return readAll(this.io.stdin);
  }

  progress(total: number, label: string, unit: "bytes" | "items" = "items"): Promise<Progress> {
    return createProgress(this.io.stderr, total, label, unit);
  }
}
