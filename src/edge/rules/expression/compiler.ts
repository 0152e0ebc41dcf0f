import type { CompiledExpression } from "./parser.js";

/**
 * The expression compiler (parser.ts: chevrotain's single-file build and re2js) is loaded off the start's critical
 * path: before the node is ready only when rules are stored (they apply to its first request), otherwise in the
 * background once the start is done (service.ts). Whoever compiles awaits `loadExpressionCompiler()` first (the
 * rules' load, every write), then calls `compileExpression` synchronously.
 */
let compile: ((source: string) => CompiledExpression) | undefined;
let loading: Promise<void> | undefined;

/** Loads the compiler once; resolves at once after that. */
export function loadExpressionCompiler(): Promise<void> {
  loading ??= import("./parser.js").then(
    (parser) => {
      // The first compile builds chevrotain's parser (its grammar analysis): done here, not by the first rules write.
      parser.compileExpression('http.host eq ""');
      compile = parser.compileExpression;
    },
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
