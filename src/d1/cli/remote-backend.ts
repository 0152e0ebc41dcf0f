import { writeFile } from "node:fs/promises";
import type { CliContext } from "../../core/cli/context.js";
import { UserError } from "../../core/errors.js";
import type { DumpOptions } from "../engine/dump.js";
import type { CliStatementResult, D1CliBackend } from "./backend.js";

export const databasesPath = (accountId: string) => `/accounts/${encodeURIComponent(accountId)}/d1/database`;

/** The platform's v4 API: `/query` for SQL, `/export` and its signed URL for an export. */
export class RemoteD1Backend implements D1CliBackend {
  readonly where = "remote";

  constructor(
    private readonly ctx: CliContext,
    private readonly accountId: string,
    private readonly uuid: string,
  ) {}

  private path(action: string): string {
    return `${databasesPath(this.accountId)}/${encodeURIComponent(this.uuid)}/${action}`;
  }

  execute(sql: string): Promise<CliStatementResult[]> {
    return this.ctx.api().fetchResult<CliStatementResult[]>("POST", this.path("query"), { json: { sql } });
  }

  async exportTo(file: string, options: DumpOptions): Promise<void> {
    const answer = await this.ctx.api().fetchResult<{ status: string; result: { signed_url: string } }>("POST", this.path("export"), {
      json: { output_format: "polling", dump_options: { no_schema: options.noSchema, no_data: options.noData, tables: options.tables ?? [] } },
    });
    const res = await fetch(answer.result.signed_url);
    if (!res.ok) throw new UserError(`Downloading the export failed with status ${res.status}`);
    await writeFile(file, Buffer.from(await res.arrayBuffer()));
  }

  close(): void {}
}
