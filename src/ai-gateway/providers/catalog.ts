import type { ProviderAdapter } from "./types.js";

const BEARER = ["authorization"] as const;

/**
 * The providers the gateway knows, with their public upstreams. Every base URL can be overridden at
 * start (`--provider-base-url <provider>=<url>`), e.g. to put a local Ollama or vLLM behind `openai`.
 */
export const PROVIDERS: readonly ProviderAdapter[] = [
  { id: "openai", baseUrl: "https://api.openai.com/v1", credentialHeaders: BEARER, stripLeadingV1: true, chatPath: "chat/completions" },
  {
    id: "anthropic",
    baseUrl: "https://api.anthropic.com",
    credentialHeaders: ["x-api-key", "authorization"],
    chatPath: "v1/chat/completions",
  },
  {
    id: "workers-ai",
    baseUrl: "https://api.cloudflare.com/client/v4/accounts/{account_id}/ai",
    credentialHeaders: BEARER,
    defaultPrefix: "run/",
    keepPrefixes: ["v1/", "run/"],
    chatPath: "v1/chat/completions",
  },
  {
    id: "azure-openai",
    baseUrl: "https://{resource}.openai.azure.com/openai/deployments/{deployment}",
    pathParams: ["resource", "deployment"],
    credentialHeaders: ["api-key", "authorization"],
  },
  {
    id: "google-ai-studio",
    baseUrl: "https://generativelanguage.googleapis.com",
    credentialHeaders: ["x-goog-api-key", "authorization"],
    chatPath: "v1beta/openai/chat/completions",
  },
  { id: "groq", baseUrl: "https://api.groq.com/openai/v1", credentialHeaders: BEARER, stripLeadingV1: true, chatPath: "chat/completions" },
  { id: "mistral", baseUrl: "https://api.mistral.ai", credentialHeaders: BEARER, chatPath: "v1/chat/completions" },
  { id: "cohere", baseUrl: "https://api.cohere.ai", credentialHeaders: BEARER, chatPath: "compatibility/v1/chat/completions" },
  { id: "deepseek", baseUrl: "https://api.deepseek.com", credentialHeaders: BEARER, chatPath: "chat/completions" },
  { id: "perplexity-ai", aliases: ["perplexity"], baseUrl: "https://api.perplexity.ai", credentialHeaders: BEARER, chatPath: "chat/completions" },
  { id: "openrouter", baseUrl: "https://openrouter.ai/api/v1", credentialHeaders: BEARER, stripLeadingV1: true, chatPath: "chat/completions" },
  { id: "grok", baseUrl: "https://api.x.ai/v1", credentialHeaders: BEARER, stripLeadingV1: true, chatPath: "chat/completions" },
  { id: "huggingface", baseUrl: "https://api-inference.huggingface.co/models", credentialHeaders: BEARER },
  { id: "replicate", baseUrl: "https://api.replicate.com/v1", credentialHeaders: BEARER, stripLeadingV1: true },
  {
    id: "cerebras",
    aliases: ["cerebras-ai"],
    baseUrl: "https://api.cerebras.ai/v1",
    credentialHeaders: BEARER,
    stripLeadingV1: true,
    chatPath: "chat/completions",
  },
];
