import { XMLBuilder, XMLParser } from "fast-xml-parser";
import { S3Errors } from "./errors.js";

export const S3_XML_NAMESPACE = "http://s3.amazonaws.com/doc/2006-03-01/";

/** Elements that S3 documents repeat; parsed as arrays even when one is given. */
const REPEATED = new Set(["Part", "Object", "CORSRule", "AllowedOrigin", "AllowedMethod", "AllowedHeader", "ExposeHeader"]);

const parser = new XMLParser({
  ignoreAttributes: true,
  removeNSPrefix: true,
  // Keys and ETags stay strings exactly as sent: no number parsing, no trimming (a key may start with a space).
  parseTagValue: false,
  trimValues: false,
  ignoreDeclaration: true,
  // Numeric character references (&#x0D; is how SDKs send a carriage return in a key) need the wider decoder.
  htmlEntities: true,
  isArray: (name) => REPEATED.has(name),
});

const builder = new XMLBuilder({ ignoreAttributes: false, attributeNamePrefix: "@_", suppressEmptyNode: false });

/** An element of a parsed document: text, a nested element, or a list of them (for REPEATED names). */
export type XmlValue = string | XmlElement | XmlValue[];
export interface XmlElement {
  [name: string]: XmlValue | undefined;
}

/** Parses a request body and returns its root element `root`; MalformedXML for anything else. */
export function parseXml(body: Buffer, root: string): XmlElement {
  const text = body.toString("utf8");
  // S3 documents have no DTD; refusing one keeps entity expansion out entirely.
  if (/<!DOCTYPE/i.test(text)) throw S3Errors.malformedXml();
  let doc: unknown;
  try {
    doc = parser.parse(text, true);
  } catch {
    throw S3Errors.malformedXml();
  }
  const element = (doc as XmlElement)[root];
  if (element === "") return {};
  if (!element || typeof element !== "object" || Array.isArray(element)) throw S3Errors.malformedXml();
  return element;
}

/** The text of a child element; undefined when absent; MalformedXML when it is not text. */
export function textOf(element: XmlElement, name: string): string | undefined {
  const v = element[name];
  if (v === undefined) return undefined;
  if (typeof v !== "string") throw S3Errors.malformedXml();
  return v;
}

/** The elements of a repeated child; MalformedXML when one of them is text. */
export function elementsOf(element: XmlElement, name: string): XmlElement[] {
  const v = element[name];
  if (v === undefined) return [];
  const list = Array.isArray(v) ? v : [v];
  return list.map((e) => {
    if (e === "") return {};
    if (typeof e !== "object" || Array.isArray(e)) throw S3Errors.malformedXml();
    return e;
  });
}

/** The texts of a repeated child (e.g. every AllowedOrigin). */
export function textsOf(element: XmlElement, name: string): string[] {
  const v = element[name];
  if (v === undefined) return [];
  return (Array.isArray(v) ? v : [v]).map((e) => {
    if (typeof e !== "string") throw S3Errors.malformedXml();
    return e;
  });
}

/** What the builder takes: element name to text, number, nested element, or a list for repeated elements. */
export type XmlContent = { [name: string]: string | number | boolean | XmlContent | XmlContent[] | string[] | undefined };

/** An S3 XML document with `root` as its root element (in S3's namespace unless `namespace` is false). */
export function xmlDocument(root: string, content: XmlContent, namespace = true): string {
  const body = namespace ? { "@_xmlns": S3_XML_NAMESPACE, ...content } : content;
  return `<?xml version="1.0" encoding="UTF-8"?>\n${escapeControlCharacters(builder.build({ [root]: body }))}`;
}

/**
 * Control characters of keys as character references, as S3 writes them: a raw carriage return would be
 * turned into a newline by the client's XML parser. (They cannot occur in the markup itself.)
 */
const escapeControlCharacters = (xml: string) => xml.replace(/[\x00-\x08\x0B-\x1F]/g, (c) => `&#x${c.charCodeAt(0).toString(16).toUpperCase()};`);
