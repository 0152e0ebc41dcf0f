/**
 * A capnp text string literal. Everything outside printable ASCII (and the quote and backslash) is written
 * as \xNN bytes of its UTF-8 form, so no value (a secret, a var) can end the string or break the config.
 */
export function capnpString(s: string): string {
  let out = '"';
  for (const b of Buffer.from(s, "utf8")) {
    if (b >= 0x20 && b < 0x7f && b !== 0x22 && b !== 0x5c) out += String.fromCharCode(b);
    else out += `\\x${b.toString(16).padStart(2, "0")}`;
  }
  return out + '"';
}
