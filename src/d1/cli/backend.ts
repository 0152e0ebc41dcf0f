import type { DumpOptions } from "../engine/dump.js";
import type { D1Meta } from "../engine/runner.js";

/** One statement's answer as the CLI prints it (the v4 `query` shape). */
export interface CliStatementResult {
  results: Record<string, unknown>[];
  success: true;
  meta: Partial<D1Meta>;
}

/** Where `edgecli d1` runs SQL: the platform's API, or the state directory's files (--local). */
export interface D1CliBackend {
  /** "remote" or "local", for messages. */
  readonly where: string;
  /** Runs `sql` (one or more statements, one transaction); one answer per statement. */
  execute(sql: string): Promise<CliStatementResult[]>;
  /** Writes the database as SQL to `file`. */
  exportTo(file: string, options: DumpOptions): Promise<void>;
  close(): void;
}
