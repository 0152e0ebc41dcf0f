import type { IRecognitionException, IToken } from "chevrotain";
import { RE2JS } from "re2js";
import { FIELDS, isField, type FieldName, type RequestFields } from "./fields.js";
import { ExpressionError } from "./error.js";
import {
  ALL_TOKENS,
  And,
  Comma,
  Contains,
  Eq,
  Identifier,
  In,
  LBrace,
  ListReference,
  LParen,
  Matches,
  Ne,
  Not,
  Or,
  RawStringLiteral,
  RBrace,
  RParen,
  RULES_LEXER,
  StringLiteral,
  UnsupportedOperator,
  Xor,
} from "./lexer.js";
import { chevrotain } from "./chevrotain.js";

const { EmbeddedActionsParser, EOF, tokenMatcher } = chevrotain;

/** A compiled expression: true when the request matches. Allocates nothing beyond what the fields derive once. */
export type Predicate = (fields: RequestFields) => boolean;

/** The hosted limit on an expression's length, in characters. */
export const MAX_EXPRESSION_LENGTH = 4096;
/** Ours: how deep parentheses and `not`s may nest (the parser recurses; this bounds its stack). */
export const MAX_NESTING = 64;
/**
 * Ours: the largest regular expression `matches` takes, in RE2 program instructions. RE2 matches in time linear in
 * the input, times the program's size; this bounds the factor (a 4 KiB expression of `a{1000}` would otherwise make
 * a program of 500,000 instructions).
 */
export const MAX_REGEX_PROGRAM = 500;

/** A parsed expression: its predicate, and the size of the regular expressions it runs (rulesets bound their sum). */
export interface CompiledExpression {
  test: Predicate;
  /** The RE2 instructions of its `matches` patterns, together. */
  regexInstructions: number;
}

const FUNCTIONS = ["starts_with", "ends_with"] as const;

export { ExpressionError };

const quote = (text: string) => JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text);

/** Line and column (1-based) of `offset` in `text`. */
function positionAt(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf("\n"); i >= 0 && i < offset; i = text.indexOf("\n", i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return { line, column: offset - lineStart + 1 };
}

const errorAt = (token: IToken, why: string) => new ExpressionError(why, token.startLine ?? 1, token.startColumn ?? 1);

/** The text of a string literal token, with its escapes checked (hosted: only `\"` and `\\`). */
function stringValue(token: IToken, source: string): string {
  const image = token.image;
  if (image.startsWith("r")) {
    const hashes = image.indexOf('"') - 1;
    return image.slice(hashes + 2, image.length - hashes - 1);
  }
  let out = "";
  for (let i = 1; i < image.length - 1; i++) {
    const c = image[i]!;
    if (c !== "\\") {
      out += c;
      continue;
    }
    const next = image[i + 1]!;
    if (next !== '"' && next !== "\\") {
      const at = positionAt(source, token.startOffset + i);
      throw new ExpressionError(`invalid escape ${quote(`\\${next}`)} in a string: the escapes are \\" and \\\\`, at.line, at.column);
    }
    out += next;
    i++;
  }
  return out;
}

function compileRegex(token: IToken, pattern: string) {
  let re: RE2JS;
  try {
    re = RE2JS.compile(pattern);
  } catch (err) {
    throw errorAt(token, `invalid regular expression ${quote(pattern)}: ${(err as Error).message}`);
  }
  if (re.programSize() > MAX_REGEX_PROGRAM)
    throw errorAt(token, `the regular expression ${quote(pattern)} is too large (${re.programSize()} RE2 instructions, at most ${MAX_REGEX_PROGRAM})`);
  return re;
}

class RulesParser extends EmbeddedActionsParser {
  /** The expression being parsed (for the position of an escape inside a string). */
  source = "";
  /** The RE2 instructions of the patterns compiled so far in this expression. */
  regexInstructions = 0;

  constructor() {
    super(ALL_TOKENS, { recoveryEnabled: false, maxLookahead: 1 });
    this.performSelfAnalysis();
  }

  // Precedence as hosted, loosest first: or, xor, and, not. Chains are n-ary, so a long `a or b or …` neither
  // recurses in the parser nor when it is evaluated.
  expression = this.RULE("expression", (): Predicate => {
    const items = [this.SUBRULE(this.xorExpression)];
    this.MANY(() => {
      this.CONSUME(Or);
      items.push(this.SUBRULE2(this.xorExpression));
    });
    return this.ACTION(() => anyOf(items));
  });

  private xorExpression = this.RULE("xorExpression", (): Predicate => {
    const items = [this.SUBRULE(this.andExpression)];
    this.MANY(() => {
      this.CONSUME(Xor);
      items.push(this.SUBRULE2(this.andExpression));
    });
    return this.ACTION(() => oddOf(items));
  });

  private andExpression = this.RULE("andExpression", (): Predicate => {
    const items = [this.SUBRULE(this.notExpression)];
    this.MANY(() => {
      this.CONSUME(And);
      items.push(this.SUBRULE2(this.notExpression));
    });
    return this.ACTION(() => allOf(items));
  });

  private notExpression = this.RULE("notExpression", (): Predicate =>
    this.OR([
      {
        ALT: () => {
          this.CONSUME(Not);
          const inner = this.SUBRULE(this.notExpression);
          return this.ACTION(() => (f: RequestFields) => !inner(f));
        },
      },
      { ALT: () => this.SUBRULE(this.primary) },
    ]),
  );

  private primary = this.RULE("primary", (): Predicate =>
    this.OR([
      {
        ALT: () => {
          this.CONSUME(LParen);
          const inner = this.SUBRULE(this.expression);
          this.CONSUME(RParen);
          return inner;
        },
      },
      { ALT: () => this.SUBRULE(this.test) },
    ]),
  );

  /** `field <operator> value` or `function(field, "value")`. */
  private test = this.RULE("test", (): Predicate => {
    const name = this.CONSUME(Identifier);
    return this.OR([{ ALT: () => this.SUBRULE(this.call, { ARGS: [name] }) }, { ALT: () => this.SUBRULE(this.comparison, { ARGS: [name] }) }]);
  });

  private call = this.RULE("call", (name: IToken): Predicate => {
    this.CONSUME(LParen);
    this.ACTION(() => {
      if (!(FUNCTIONS as readonly string[]).includes(name.image))
        throw errorAt(name, `unknown function ${quote(name.image)}: the functions here are ${FUNCTIONS.join(", ")}`);
    });
    const fieldToken = this.CONSUME(Identifier);
    this.CONSUME(Comma);
    const value = this.SUBRULE(this.string);
    this.CONSUME(RParen);
    return this.ACTION(() => {
      const field = fieldOf(fieldToken);
      return name.image === "starts_with" ? (f: RequestFields) => f.value(field).startsWith(value) : (f: RequestFields) => f.value(field).endsWith(value);
    });
  });

  private comparison = this.RULE("comparison", (name: IToken): Predicate => {
    const field = this.ACTION(() => fieldOf(name));
    return this.OR([
      {
        ALT: () => {
          this.CONSUME(Eq);
          const value = this.SUBRULE(this.string);
          return this.ACTION(() => (f: RequestFields) => f.value(field) === value);
        },
      },
      {
        ALT: () => {
          this.CONSUME(Ne);
          const value = this.SUBRULE2(this.string);
          return this.ACTION(() => (f: RequestFields) => f.value(field) !== value);
        },
      },
      {
        ALT: () => {
          this.CONSUME(Contains);
          const value = this.SUBRULE3(this.string);
          return this.ACTION(() => (f: RequestFields) => f.value(field).includes(value));
        },
      },
      {
        ALT: () => {
          this.CONSUME(Matches);
          const patternToken = this.LA(1);
          const pattern = this.SUBRULE4(this.string);
          return this.ACTION(() => {
            const re = compileRegex(patternToken, pattern);
            this.regexInstructions += re.programSize();
            return (f: RequestFields) => re.test(f.value(field));
          });
        },
      },
      {
        ALT: () => {
          this.CONSUME(In);
          this.CONSUME(LBrace);
          const values: string[] = [];
          this.AT_LEAST_ONE(() => values.push(this.SUBRULE5(this.string)));
          this.CONSUME(RBrace);
          return this.ACTION(() => {
            const set = new Set(values);
            return (f: RequestFields) => set.has(f.value(field));
          });
        },
      },
      {
        ALT: () => {
          const op = this.CONSUME(UnsupportedOperator);
          return this.ACTION(() => {
            throw errorAt(op, `the operator ${quote(op.image)} is not supported here: the operators are eq, ne, in, contains, matches`);
          });
        },
      },
    ]);
  });

  private string = this.RULE("string", (): string => {
    const token = this.OR([{ ALT: () => this.CONSUME(StringLiteral) }, { ALT: () => this.CONSUME(RawStringLiteral) }]);
    return this.ACTION(() => stringValue(token, this.source));
  });
}

function fieldOf(token: IToken): FieldName {
  if (!isField(token.image)) throw errorAt(token, `unknown field ${quote(token.image)}: the fields here are ${FIELDS.join(", ")}`);
  return token.image;
}

const TRUE: Predicate = () => true;

function allOf(items: Predicate[]): Predicate {
  if (items.length === 1) return items[0]!;
  return (f) => {
    for (const p of items) if (!p(f)) return false;
    return true;
  };
}

/** `xor`: true when an odd number of the items are. */
function oddOf(items: Predicate[]): Predicate {
  if (items.length === 1) return items[0]!;
  return (f) => {
    let odd = false;
    for (const p of items) if (p(f)) odd = !odd;
    return odd;
  };
}

function anyOf(items: Predicate[]): Predicate {
  if (items.length === 1) return items[0]!;
  return (f) => {
    for (const p of items) if (p(f)) return true;
    return false;
  };
}

/** One parser, reused: parsing is synchronous, so no two expressions share it at once. */
let parser: RulesParser | undefined;

/** The refusal of a parse error, in our words (chevrotain's name token types). */
function recognitionError(e: IRecognitionException, source: string): ExpressionError {
  const token = e.token;
  if (tokenMatcher(token, EOF) || token.image === undefined || token.image === "") {
    const end = positionAt(source, source.length);
    return new ExpressionError("unexpected end of expression", end.line, end.column);
  }
  if (tokenMatcher(token, ListReference)) return errorAt(token, `lists (${quote(token.image)}) are not supported here`);
  const previous = (e as IRecognitionException & { previousToken?: IToken }).previousToken;
  if (tokenMatcher(token, Identifier) && previous && tokenMatcher(previous, Identifier))
    return errorAt(token, `unknown operator ${quote(token.image)}: the operators are eq, ne, in, contains, matches`);
  return errorAt(token, `unexpected ${quote(token.image)}`);
}

/**
 * Parses and compiles an expression of the hosted Rules language (the fields, operators and functions above), or
 * throws an ExpressionError naming what it refuses and where. Time and memory are linear in the expression's length,
 * which is bounded, and the nesting is bounded before the (recursive) parser sees it.
 */
export function compileExpression(source: string): CompiledExpression {
  if (source.length > MAX_EXPRESSION_LENGTH)
    throw new ExpressionError(`the expression is ${source.length} characters long; at most ${MAX_EXPRESSION_LENGTH} are allowed`, 1, 1);
  if (source.trim() === "") throw new ExpressionError("the expression is empty", 1, 1);
  const lexed = RULES_LEXER.tokenize(source);
  const lexError = lexed.errors[0];
  if (lexError) {
    const c = source[lexError.offset]!;
    const why = c === '"' ? "unterminated string" : c === "r" ? "unterminated raw string" : `unexpected character ${quote(c)}`;
    throw new ExpressionError(why, lexError.line ?? 1, lexError.column ?? 1);
  }
  checkNesting(lexed.tokens);
  parser ??= new RulesParser();
  parser.source = source;
  parser.regexInstructions = 0;
  parser.input = lexed.tokens;
  const predicate = parser.expression();
  const parseError = parser.errors[0];
  if (parseError) throw recognitionError(parseError, source);
  return { test: predicate ?? TRUE, regexInstructions: parser.regexInstructions };
}

/** Refuses parentheses and `not`s nested deeper than MAX_NESTING, before the parser recurses into them. */
function checkNesting(tokens: IToken[]): void {
  let parens = 0;
  let nots = 0;
  for (const t of tokens) {
    if (tokenMatcher(t, LParen)) parens++;
    else if (tokenMatcher(t, RParen)) parens--;
    if (tokenMatcher(t, Not)) nots++;
    else if (!tokenMatcher(t, LParen)) nots = 0;
    if (parens + nots > MAX_NESTING) throw errorAt(t, `the expression nests deeper than ${MAX_NESTING} levels of parentheses and not`);
  }
}
