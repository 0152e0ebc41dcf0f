import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ProviderRegistry, upstreamUrl } from "./registry.js";

describe("AI gateway providers", () => {
  it("maps client paths to provider upstreams, with overrides", () => {
    const reg = new ProviderRegistry(["openai=http://127.0.0.1:9/v1/"]);
    const u = (provider: string, path: string, search = "") => String(upstreamUrl(reg.get(provider)!, "acc", path, search));
    assert.equal(u("openai", "chat/completions", "?x=1"), "http://127.0.0.1:9/v1/chat/completions?x=1");
    assert.equal(u("grok", "v1/chat/completions"), "https://api.x.ai/v1/chat/completions");
    assert.equal(u("grok", "chat/completions"), "https://api.x.ai/v1/chat/completions");
    assert.equal(u("anthropic", "v1/messages"), "https://api.anthropic.com/v1/messages");
    assert.equal(u("workers-ai", "@cf/meta/llama-3.1-8b-instruct"), "https://api.cloudflare.com/client/v4/accounts/acc/ai/run/@cf/meta/llama-3.1-8b-instruct");
    assert.equal(u("workers-ai", "v1/chat/completions"), "https://api.cloudflare.com/client/v4/accounts/acc/ai/v1/chat/completions");
    assert.equal(
      u("azure-openai", "res1/dep1/chat/completions", "?api-version=2024-10-21"),
      "https://res1.openai.azure.com/openai/deployments/dep1/chat/completions?api-version=2024-10-21",
    );
    assert.equal(typeof upstreamUrl(reg.get("azure-openai")!, "acc", "", ""), "string");
    assert.equal(reg.get("cerebras-ai")!.id, "cerebras");
    assert.equal(typeof upstreamUrl(reg.get("workers-ai")!, "acc", "../../other/ai/run/x", ""), "string", "no climbing out of the base");
    assert.equal(typeof upstreamUrl(reg.get("openai")!, "acc", "%2e%2e/admin", ""), "string");
    for (const resource of ["%25", "a b", "a#b", "a@b", "a%2Fb", "a\u0000b", "-a", "a.b"])
      assert.equal(typeof upstreamUrl(reg.get("azure-openai")!, "acc", `${resource}/dep/chat/completions`, ""), "string", resource);
    assert.equal(typeof upstreamUrl(reg.get("azure-openai")!, "acc", "res/d p/chat/completions", ""), "string");
    assert.equal(typeof upstreamUrl(reg.get("openai")!, "acc", "chat/completions#x", ""), "string");
    assert.equal(typeof upstreamUrl(reg.get("openai")!, "acc", "chat/completions", "?a=b c"), "string");
    assert.equal(
      u("azure-openai", "res-1/gpt-4o_mini.v2/chat/completions?api-version=1"),
      "https://res-1.openai.azure.com/openai/deployments/gpt-4o_mini.v2/chat/completions?api-version=1",
      "a universal step's endpoint carries its query in the path",
    );
    assert.throws(() => new ProviderRegistry(["nope=http://x"]), /unknown provider "nope"/);
    assert.throws(() => new ProviderRegistry(["openai=ftp://x"]), /expected <provider>=<http\(s\) URL>/);
  });
});
