import type { NodeOnlyState } from "../core/state-copy/area.js";

/** D1's databases are SQLite files of one machine: refused on PostgreSQL, so `edgecli state copy` cannot carry them. */
export const d1NodeOnly: readonly NodeOnlyState[] = [{ database: "d1", count: "SELECT count(*) AS n FROM databases", what: "D1 databases" }];
