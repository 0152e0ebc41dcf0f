// The platform under test for the gateway benchmarks: `edgecli serve` from a checkout's dist/, with a gateway
// "bench" (authentication and logging on unless GATEWAY_AUTH=0 / GATEWAY_LOGS=0) and a Run token for it.
export const benchGateway = {
  id: "bench",
  cache_ttl: 0,
  cache_invalidate_on_update: false,
  collect_logs: process.env.GATEWAY_LOGS !== "0",
  rate_limiting_interval: 0,
  rate_limiting_limit: 0,
  authentication: process.env.GATEWAY_AUTH !== "0",
};

/** Starts the platform of `checkout` (a directory with a built dist/) against `upstream`, with `gateways` made in it. */
export async function startPlatform(checkout, upstream, { nodeArgs, gateways = [benchGateway] } = {}) {
  const { startTestPlatform } = await import(`${checkout.replace(/\/$/, "")}/dist/core/testing/platform.js`);
  const p = await startTestPlatform({ args: ["--dns-port", "0", "--provider-base-url", `openai=${upstream}`], nodeArgs });
  for (const g of gateways) {
    if ((await p.api("POST", `/accounts/${p.accountId}/ai-gateway/gateways`, g)).status !== 200) throw new Error(`creating gateway ${g.id} failed`);
  }
  const tok = await p.api("POST", `/accounts/${p.accountId}/tokens`, { name: "bench", permissions: ["ai_gateway_run"] });
  return { p, runToken: tok.body.result.value };
}
