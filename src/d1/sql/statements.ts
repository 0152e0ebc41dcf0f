/**
 * SQL text as SQLite reads it: split into statements, and each statement's first keywords, which decide whether
 * D1 runs it at all (statement-guard.ts). The tokenizer follows SQLite's lexical rules (tokenize.c): `--` and
 * `/* *\/` comments, '…' strings, "…", `…` and […] identifiers, x'…' blobs, ?NNN / :name parameters; a
 * statement ends at a `;` outside all of those, except inside `CREATE TRIGGER … BEGIN … END`, whose body holds
 * `;`-terminated statements of its own (`; END ;`, the rule of sqlite3_complete()).
 *
 * Every statement is then prepared alone by better-sqlite3, which refuses a string holding more than one: a
 * split that disagreed with SQLite would fail there, never run a statement the guard did not see.
 */

export interface Token {
  /** "word" (keyword or bare identifier), "quoted" (a quoted identifier), "string", "blob", "number", "param", "punct". */
  kind: "word" | "quoted" | "string" | "blob" | "number" | "param" | "punct";
  /** The text; a word upper-cased, a quoted identifier without its quotes. */
  text: string;
}

export interface Statement {
  /** The statement's text as written (without the `;` that ended it). */
  sql: string;
  tokens: Token[];
}

const isSpace = (c: string) => c === " " || c === "\t" || c === "\n" || c === "\r" || c === "\f" || c === "\v";
const isWordChar = (c: string) => /[A-Za-z0-9_$\u0080-\uffff]/.test(c);

/** Where the quoted run starting at `i` (opened by `open`) ends: the index after its closing quote (a doubled quote escapes it). */
function endOfQuoted(sql: string, i: number, close: string): number {
  let j = i + 1;
  for (;;) {
    const k = sql.indexOf(close, j);
    if (k < 0) return sql.length;
    if (close !== "]" && sql[k + 1] === close) {
      j = k + 2;
      continue;
    }
    return k + 1;
  }
}

/** Splits `sql` into its statements, dropping empty ones (only whitespace, comments or `;`). */
export function splitStatements(sql: string): Statement[] {
  const out: Statement[] = [];
  let tokens: Token[] = [];
  let start = 0;
  /** 0: not a trigger; 1: in `CREATE [TEMP] TRIGGER` before BEGIN; 2: in its body, a `;END` closes it. */
  let trigger = 0;
  let i = 0;
  const push = (t: Token) => tokens.push(t);
  const finish = (end: number) => {
    if (tokens.length > 0) out.push({ sql: sql.slice(start, end).trim(), tokens });
    tokens = [];
    trigger = 0;
  };
  while (i < sql.length) {
    const c = sql[i]!;
    if (isSpace(c)) {
      i++;
    } else if (c === "-" && sql[i + 1] === "-") {
      const nl = sql.indexOf("\n", i);
      i = nl < 0 ? sql.length : nl + 1;
    } else if (c === "/" && sql[i + 1] === "*") {
      const end = sql.indexOf("*/", i + 2);
      i = end < 0 ? sql.length : end + 2;
    } else if (c === ";") {
      const last = tokens.at(-1);
      // A trigger's body ends at `; END ;` (an END after anything else closes a CASE).
      const bodyEnds = trigger === 2 && last?.kind === "word" && last.text === "END" && tokens.at(-2)?.text === ";";
      if (trigger === 0 || bodyEnds) {
        finish(i);
        start = i + 1;
      } else push({ kind: "punct", text: ";" });
      i++;
    } else if (c === "'") {
      const end = endOfQuoted(sql, i, "'");
      push({ kind: "string", text: sql.slice(i + 1, end - 1).replaceAll("''", "'") });
      i = end;
    } else if (c === '"' || c === "`" || c === "[") {
      const close = c === "[" ? "]" : c;
      const end = endOfQuoted(sql, i, close);
      const inner = sql.slice(i + 1, end - 1);
      push({ kind: "quoted", text: close === "]" ? inner : inner.replaceAll(close + close, close) });
      i = end;
    } else if ((c === "x" || c === "X") && sql[i + 1] === "'") {
      const end = endOfQuoted(sql, i + 1, "'");
      push({ kind: "blob", text: sql.slice(i + 2, end - 1) });
      i = end;
    } else if (c === "?" || c === ":" || c === "@" || c === "$" || c === "#") {
      let j = i + 1;
      while (j < sql.length && isWordChar(sql[j]!)) j++;
      push({ kind: "param", text: sql.slice(i, j) });
      i = j;
    } else if (/[0-9]/.test(c) || (c === "." && /[0-9]/.test(sql[i + 1] ?? ""))) {
      let j = i + 1;
      while (j < sql.length && /[0-9A-Za-z_.]/.test(sql[j]!)) {
        if ((sql[j] === "e" || sql[j] === "E") && (sql[j + 1] === "+" || sql[j + 1] === "-")) j++;
        j++;
      }
      push({ kind: "number", text: sql.slice(i, j) });
      i = j;
    } else if (isWordChar(c)) {
      let j = i + 1;
      while (j < sql.length && isWordChar(sql[j]!)) j++;
      const word = sql.slice(i, j).toUpperCase();
      push({ kind: "word", text: word });
      if (trigger === 0 && word === "TRIGGER" && isCreateTrigger(tokens)) trigger = 1;
      else if (trigger === 1 && word === "BEGIN") trigger = 2;
      i = j;
    } else {
      push({ kind: "punct", text: c });
      i++;
    }
  }
  finish(sql.length);
  return out;
}

/** Whether the tokens so far are `CREATE [TEMP|TEMPORARY] TRIGGER`. */
function isCreateTrigger(tokens: Token[]): boolean {
  const words = tokens.map((t) => (t.kind === "word" ? t.text : ""));
  if (words.length === 2) return words[0] === "CREATE";
  return words.length === 3 && words[0] === "CREATE" && (words[1] === "TEMP" || words[1] === "TEMPORARY");
}

/** The numbers of the statement's `?NNN` parameters (empty when it uses `?` alone or none). */
export function numberedParameters(statement: Statement): number[] {
  const out: number[] = [];
  for (const t of statement.tokens) if (t.kind === "param" && /^\?\d+$/.test(t.text)) out.push(Number(t.text.slice(1)));
  return out;
}
