import { UserError } from "../errors.js";
import type { AreaCopier, ContentCopy, Row, Side, TableCopy } from "./area.js";
import { keyString, LARGE_INLINE_BYTES, lengthOf, type AreaRows, type CopySide } from "./sides.js";

/** Rows read per page (and checked for in the target with one query). */
const PAGE_ROWS = 200;
/** Rows whose bodies are copied at the same time. */
const BODIES_AT_ONCE = 4;
/** Rows held for one insert: a page is inserted in parts once the rows it holds reach this many bytes. */
const INSERT_BYTES = 32 * 1024 * 1024;

/** What the copy did to one table, for the count check. */
export interface TableCount {
  area: string;
  table: string;
  /** Rows in the source. */
  source: number;
  /** Rows in the target before and after the copy. */
  before: number;
  after: number;
  /** Rows the copy inserted, and rows it left because the target had them already (same key). */
  copied: number;
  present: number;
  /** Rows the target refused although their key was not there (another unique value, e.g. a user's email). */
  refused: number;
}

export interface CopyOptions {
  /** Copy into a target that holds rows already: rows with the same key are left as they are. */
  intoNonEmpty: boolean;
  /** Called once the source is counted (total rows), then after each page (rows done so far). */
  onStart?(totalRows: number): void | Promise<void>;
  onRows?(area: string, table: string, doneInTable: number, tableRows: number, doneInAll: number): void;
}

interface OpenArea {
  copier: AreaCopier;
  source: AreaRows;
  target: AreaRows;
  /** The backend rows go to. */
  targetKind: Side;
  counts: TableCount[];
}

/**
 * Copies every area `copiers` names from one side to the other: rows through plain SQL on both backends, table by
 * table in key order, a page at a time; bodies streamed from the source's content store into the target's before
 * the row naming them is inserted (so the target never has a row without its body; a body whose row was never
 * inserted, after an interruption, is the target's garbage collection's to remove). Rows the target already holds
 * (same key) are left as they are, which makes a second run finish an interrupted one. Returns the counts per table.
 */
export async function copyState(copiers: readonly AreaCopier[], from: CopySide, to: CopySide, opts: CopyOptions): Promise<TableCount[]> {
  for (const side of [from, to]) {
    const why = await side.inUse();
    if (why) throw new UserError(`The platform is running: ${why}. Stop every node (and edgecli serve) before copying its state.`);
  }
  const areas: OpenArea[] = [];
  for (const copier of copiers) {
    const source = await from.open(copier, "source");
    const target = await to.open(copier, "target");
    const counts: TableCount[] = [];
    for (const t of copier.tables) {
      counts.push({
        area: copier.name,
        table: t.table,
        source: await source.count(t),
        before: await target.count(t),
        after: 0,
        copied: 0,
        present: 0,
        refused: 0,
      });
    }
    areas.push({ copier, source, target, targetKind: to.kind, counts });
  }
  const holding = areas.flatMap((a) => a.counts).filter((c) => c.before > 0);
  if (holding.length > 0 && !opts.intoNonEmpty) {
    throw new UserError(
      `${to.where} holds rows already (${holding.map((c) => `${c.area} ${c.table}: ${c.before}`).join(", ")}). Copy into an empty one, or add --into-non-empty to copy into it anyway: rows it has already (same key) are left as they are, which is also how an interrupted copy is finished.`,
    );
  }
  const all = areas.flatMap((a) => a.counts);
  await opts.onStart?.(all.reduce((n, c) => n + c.source, 0));
  let done = 0;
  for (const area of areas) {
    // Generated ids (R2 bucket numbers) of the source, by table, translated to the target's.
    const ids = new Map<string, Map<string, unknown>>();
    for (const [i, t] of area.copier.tables.entries()) {
      const count = area.counts[i]!;
      await copyTable(area, t, ids, count, (rows) => {
        done += rows;
        opts.onRows?.(area.copier.name, t.table, count.copied + count.present + count.refused, count.source, done);
      });
      count.after = await area.target.count(t);
    }
  }
  return all;
}

/** The differences the count check finds: each table's rows must all be in the target, and nothing else have changed. */
export function countMismatches(counts: readonly TableCount[]): string[] {
  const out: string[] = [];
  for (const c of counts) {
    const where = `${c.area} ${c.table}`;
    if (c.refused > 0) out.push(`${where}: ${c.refused} row(s) refused by the target (a unique value another row there holds)`);
    if (c.copied + c.present + c.refused !== c.source) out.push(`${where}: ${c.source} in the source, ${c.copied + c.present + c.refused} read`);
    if (c.after !== c.before + c.copied)
      out.push(`${where}: the target holds ${c.after}, expected ${c.before + c.copied} (${c.before} before + ${c.copied} copied)`);
  }
  return out;
}

async function copyTable(area: OpenArea, t: TableCopy, ids: Map<string, Map<string, unknown>>, count: TableCount, onPage: (rows: number) => void) {
  const { source, target } = area;
  const translated = new Map<string, unknown>();
  ids.set(t.table, translated);
  let after: unknown[] | undefined;
  for (;;) {
    const page = await source.page(t, after, PAGE_ROWS);
    if (page.length === 0) return;
    after = t.key.map((k) => page[page.length - 1]![k]);
    const rows = page.map((r) => withReferencesTranslated(area.copier.name, t, r, ids));
    const there = await target.existing(t, rows);
    const fresh: { row: Row; sourceId: unknown; bodies: string[] }[] = [];
    for (const [i, row] of rows.entries()) {
      const existing = there.get(keyString(t, row));
      if (existing === undefined) fresh.push({ row, sourceId: t.generatedId && page[i]![t.generatedId], bodies: [] });
      else {
        count.present++;
        if (t.generatedId) translated.set(String(page[i]![t.generatedId]), existing);
      }
    }
    for (let start = 0; start < fresh.length;) {
      // Bodies first, a few rows at a time; then one insert for as many rows as fit in INSERT_BYTES.
      let bytes = 0;
      let end = start;
      while (end < fresh.length && (end === start || bytes < INSERT_BYTES)) {
        const group = fresh.slice(end, Math.min(end + BODIES_AT_ONCE, fresh.length));
        await Promise.all(group.map(async (f) => (f.row = await prepareRow(area, t, f.row, f.bodies))));
        bytes += group.reduce((n, f) => n + rowBytes(f.row), 0);
        end += group.length;
      }
      const batch = fresh.slice(start, end);
      let inserted: Map<string, unknown>;
      try {
        inserted = await target.insert(
          t,
          batch.map((f) => f.row),
        );
      } catch (err) {
        await dropBodies(
          target,
          batch.flatMap((f) => f.bodies),
        );
        throw err;
      }
      for (const f of batch) {
        const id = inserted.get(keyString(t, f.row));
        if (id === undefined) {
          count.refused++;
          await dropBodies(target, f.bodies);
        } else {
          count.copied++;
          if (t.generatedId) translated.set(String(f.sourceId), id);
        }
      }
      start = end;
    }
    onPage(page.length);
  }
}

/** The row with each reference to a generated id (a bucket number) replaced by the target's number for it. */
function withReferencesTranslated(area: string, t: TableCopy, row: Row, ids: Map<string, Map<string, unknown>>): Row {
  if (!t.references) return row;
  const out: Row = { ...row };
  for (const [column, table] of Object.entries(t.references)) {
    const id = ids.get(table)?.get(String(row[column]));
    if (id === undefined) throw new Error(`${area} ${t.table}: a row names ${table} ${String(row[column])}, which the source does not hold`);
    out[column] = id;
  }
  return out;
}

/** Reads the large values the page left out, then lets the area copy the row's bodies. */
async function prepareRow(area: OpenArea, t: TableCopy, row: Row, bodies: string[]): Promise<Row> {
  let out = row;
  for (const column of t.large ?? []) {
    if ((lengthOf(row, column) ?? 0) > LARGE_INLINE_BYTES) out = { ...out, [column]: await area.source.readLarge(t, row, column) };
  }
  return t.copyContent ? t.copyContent(out, bodiesOf(area, t, bodies)) : out;
}

function bodiesOf(area: OpenArea, t: TableCopy, bodies: string[]): ContentCopy {
  const { source, target } = area;
  const stores = () => {
    if (!source.content || !target.content) throw new Error(`${area.copier.name} ${t.table} names bodies, but the area declares no content store`);
    return { from: source.content, to: target.content };
  };
  /** A body a row names that the source does not hold is a broken source, said as such. */
  const missing = (id: string) => (err: unknown) => {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") throw new Error(`${area.copier.name} ${t.table}: the source has no body ${id}, which a row names`);
    throw err;
  };
  return {
    target: area.targetKind,
    async copy(id) {
      const { from, to } = stores();
      const stored = await to.put(from.read(id)).catch(missing(id));
      bodies.push(stored.id);
      return stored.id;
    },
    async put(bytes) {
      const stored = await stores().to.put(bytes);
      bodies.push(stored.id);
      return stored.id;
    },
    read: (id) => stores().from.readAll(id).catch(missing(id)),
  };
}

function rowBytes(row: Row): number {
  let n = 0;
  for (const v of Object.values(row)) n += Buffer.isBuffer(v) ? v.length : typeof v === "string" ? v.length : 8;
  return n;
}

async function dropBodies(target: AreaRows, ids: readonly string[]) {
  for (const id of ids) await target.content?.delete(id).catch(() => undefined);
}
