import { isIPv6 } from "node:net";

/** Whether two literal addresses are the same, however an IPv6 one is written (2001:0db8::1 is 2001:db8::1). */
export function sameAddress(a: string, b: string): boolean {
  const canonical = (x: string) => (isIPv6(x) ? new URL(`http://[${x}]/`).hostname : x);
  return canonical(a) === canonical(b);
}
