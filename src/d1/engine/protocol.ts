import type { DumpOptions } from "./dump.js";
import type { PlannedStatement } from "./plan.js";
import type { StatementResult } from "./runner.js";

/** What the platform asks a database's executor process (one job at a time). */
export type ExecutorJob =
  | { op: "query"; statements: PlannedStatement[] }
  /** Writes the database as SQL to `path`. */
  | { op: "dump"; path: string; options: DumpOptions }
  /** Runs the SQL file at `path` in one transaction. */
  | { op: "import"; path: string }
  | { op: "stats" };

export interface DatabaseStats {
  size: number;
  tables: number;
}

export interface ImportResult {
  statements: number;
  rowsWritten: number;
  size: number;
  duration: number;
}

export type ExecutorAnswer =
  | { ok: true; results?: StatementResult[]; stats?: DatabaseStats; imported?: ImportResult }
  | { ok: false; kind: "sql" | "tooLarge"; message: string }
  /** A D1Errors refusal raised in the executor (an import's statement the guard refuses), as the API answers it. */
  | { ok: false; kind: "refusal"; status: number; code: number; message: string };
