/**
 * Header values as text. Node hands header bytes over as Latin-1; S3 clients send non-ASCII values as UTF-8 bytes
 * (the JS SDK) or as RFC 2047 encoded words (`=?UTF-8?B?...?=`, how S3 itself sends metadata back).
 */

/** The value's bytes read as UTF-8 when they are valid UTF-8, else the value as it came. */
export function headerBytesAsText(raw: string): string {
  if (!/[\x80-\xff]/.test(raw)) return raw;
  const bytes = Buffer.from(raw, "latin1");
  const utf8 = bytes.toString("utf8");
  return Buffer.from(utf8, "utf8").equals(bytes) ? utf8 : raw;
}

/** The text of a header: an RFC 2047 encoded word decoded, otherwise its bytes as UTF-8 where they are. */
export function headerText(raw: string): string {
  const encoded = /^=\?UTF-8\?([BQ])\?([^?]*)\?=$/i.exec(raw);
  if (!encoded) return headerBytesAsText(raw);
  const bytes =
    encoded[1].toUpperCase() === "B"
      ? Buffer.from(encoded[2], "base64")
      : Buffer.from(
          encoded[2].replace(/_/g, " ").replace(/=([0-9A-Fa-f]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16))),
          "latin1",
        );
  return bytes.toString("utf8");
}

/** A value safe to send as a header: printable ASCII as it is, anything else as an RFC 2047 encoded word. */
export function headerValue(text: string): string {
  return /^[\x20-\x7e\t]*$/.test(text) ? text : `=?UTF-8?B?${Buffer.from(text, "utf8").toString("base64")}?=`;
}
