import secureJson from "secure-json-parse";

/**
 * JSON.parse for text a client sent: an object key `__proto__`, or a `constructor` object holding
 * `prototype`, is a SyntaxError (as in Fastify's own body parser, which the platform's replaces). Such
 * keys are harmless in a parsed object but pollute whatever a later merge or assignment copies them into.
 */
export function parseClientJson(text: string): unknown {
  return secureJson.parse(text, undefined, { protoAction: "error", constructorAction: "error" });
}
