import type { CustomPatternMatcherReturn, TokenType } from "chevrotain";
import { chevrotain } from "./chevrotain.js";

const { createToken, Lexer } = chevrotain;

/**
 * The tokens of the hosted Rules language (Wireshark-like), as far as Cache Rules use it here. Operators the hosted
 * language has but this platform does not evaluate (`lt`, `wildcard`, `^^`…) are still tokens, so the parser can
 * refuse them by name instead of with a bare "unexpected character".
 */

const WORD_END = "(?![A-Za-z0-9_.])";

export const Identifier = createToken({ name: "Identifier", pattern: /[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*/ });

/** A keyword, unless it is the start of a longer identifier (`in` vs `index`). */
const keyword = (name: string, word: string, categories: TokenType[] = []) =>
  createToken({ name, pattern: new RegExp(`${word}${WORD_END}`), longer_alt: Identifier, categories });
const symbol = (name: string, text: string, categories: TokenType[] = []) => createToken({ name, pattern: text, categories });

export const Eq = createToken({ name: "Eq", pattern: Lexer.NA });
export const Ne = createToken({ name: "Ne", pattern: Lexer.NA });
export const Matches = createToken({ name: "Matches", pattern: Lexer.NA });
export const And = createToken({ name: "And", pattern: Lexer.NA });
export const Or = createToken({ name: "Or", pattern: Lexer.NA });
export const Xor = createToken({ name: "Xor", pattern: Lexer.NA });
export const Not = createToken({ name: "Not", pattern: Lexer.NA });
/** Hosted operators refused here (ordering comparisons of strings, wildcards). */
export const UnsupportedOperator = createToken({ name: "UnsupportedOperator", pattern: Lexer.NA });

export const Contains = keyword("Contains", "contains");
export const In = keyword("In", "in");

/** `"…"`: the hosted escapes are `\"` and `\\` only; the parser checks them (with their position). */
export const StringLiteral = createToken({ name: "StringLiteral", pattern: /"(?:[^"\\]|\\[\s\S])*"/ });

/**
 * `r"…"` and `r#"…"#` (as many `#` as needed): raw strings, no escapes. A custom matcher, as the closing delimiter
 * depends on the opening one.
 */
export const RawStringLiteral = createToken({
  name: "RawStringLiteral",
  line_breaks: true,
  start_chars_hint: ["r"],
  pattern: {
    exec(text: string, offset: number): CustomPatternMatcherReturn | null {
      if (text.charCodeAt(offset) !== 0x72 /* r */) return null;
      let at = offset + 1;
      while (text.charCodeAt(at) === 0x23 /* # */) at++;
      const hashes = at - offset - 1;
      if (text.charCodeAt(at) !== 0x22 /* " */) return null;
      const close = '"' + "#".repeat(hashes);
      const end = text.indexOf(close, at + 1);
      if (end < 0) return null;
      return [text.slice(offset, end + close.length)] as CustomPatternMatcherReturn;
    },
  },
});

export const LParen = symbol("LParen", "(");
export const RParen = symbol("RParen", ")");
export const LBrace = symbol("LBrace", "{");
export const RBrace = symbol("RBrace", "}");
export const Comma = symbol("Comma", ",");
/** `$name`: a hosted list; refused by the parser. */
export const ListReference = createToken({ name: "ListReference", pattern: /\$[A-Za-z0-9_]*/ });
export const NumberLiteral = createToken({ name: "NumberLiteral", pattern: /[0-9]+/ });
const WhiteSpace = createToken({ name: "WhiteSpace", pattern: /[ \t\r\n]+/, group: Lexer.SKIPPED, line_breaks: true });

export const ALL_TOKENS: TokenType[] = [
  WhiteSpace,
  StringLiteral,
  RawStringLiteral,
  // Two-character symbols before their one-character prefixes.
  symbol("EqSymbol", "==", [Eq]),
  symbol("NeSymbol", "!=", [Ne]),
  symbol("AndSymbol", "&&", [And]),
  symbol("OrSymbol", "||", [Or]),
  symbol("XorSymbol", "^^", [Xor]),
  symbol("LeSymbol", "<=", [UnsupportedOperator]),
  symbol("GeSymbol", ">=", [UnsupportedOperator]),
  symbol("LtSymbol", "<", [UnsupportedOperator]),
  symbol("GtSymbol", ">", [UnsupportedOperator]),
  symbol("NotSymbol", "!", [Not]),
  symbol("MatchesSymbol", "~", [Matches]),
  keyword("EqWord", "eq", [Eq]),
  keyword("NeWord", "ne", [Ne]),
  keyword("AndWord", "and", [And]),
  keyword("OrWord", "or", [Or]),
  keyword("XorWord", "xor", [Xor]),
  keyword("NotWord", "not", [Not]),
  keyword("MatchesWord", "matches", [Matches]),
  keyword("LtWord", "lt", [UnsupportedOperator]),
  keyword("LeWord", "le", [UnsupportedOperator]),
  keyword("GtWord", "gt", [UnsupportedOperator]),
  keyword("GeWord", "ge", [UnsupportedOperator]),
  keyword("WildcardWord", "wildcard", [UnsupportedOperator]),
  keyword("StrictWord", "strict", [UnsupportedOperator]),
  Contains,
  In,
  Identifier,
  NumberLiteral,
  ListReference,
  LParen,
  RParen,
  LBrace,
  RBrace,
  Comma,
  Eq,
  Ne,
  Matches,
  And,
  Or,
  Xor,
  Not,
  UnsupportedOperator,
];

export const RULES_LEXER = new Lexer(ALL_TOKENS, { ensureOptimizations: false, positionTracking: "full" });
