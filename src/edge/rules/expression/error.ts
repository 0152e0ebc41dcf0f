/** A refusal of an expression, with where it is (1-based line and column, as the hosted "(1:26)"). */
export class ExpressionError extends Error {
  constructor(
    readonly why: string,
    readonly line: number,
    readonly column: number,
  ) {
    super(`Filter parsing error (${line}:${column}): ${why}`);
  }
}
