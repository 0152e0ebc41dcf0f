import type { CompiledExpression } from "./parser.js";

/**
 * The expression compiler (parser.ts: chevrotain and re2js, about 5 MiB of heap and a noticeable time to load) is
 * loaded by the first use, not at every start: a node whose zones have no Cache Rules never needs it. Whoever compiles
 * awaits `loadExpressionCompiler()` first (the rules' load when there are stored rules, every write), then calls
 * `compileExpression` synchronously.
 */
let compile: ((source: string) => CompiledExpression) | undefined;
let loading: Promise<void> | undefined;

/** Loads the compiler once; resolves at once after that. */
export function loadExpressionCompiler(): Promise<void> {
  loading ??= import("./parser.js").then(
    (parser) => void (compile = parser.compileExpression),
    (err: unknown) => {
      loading = undefined;
      throw err;
    },
  );
  return loading;
}

/** Parses and compiles `source` (throws ExpressionError); only once `loadExpressionCompiler()` has resolved. */
export function compileExpression(source: string): CompiledExpression {
  if (!compile) throw new Error("the Cache Rules expression compiler is used before loadExpressionCompiler() resolved");
  return compile(source);
}
