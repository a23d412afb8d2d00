// The AI-level scenarios: for each wire API, what the mock server replies, and which model,
// context and options pi's `stream` (or `streamSimple`) gets. Our layers get the same options
// JSON (our StreamOptions has pi's flat ProviderStreamOptions shape).

import * as anthropic from "./wire/anthropic-messages.mjs";
import * as google from "./wire/google-generative-ai.mjs";
import * as mistral from "./wire/mistral-conversations.mjs";
import * as completions from "./wire/openai-completions.mjs";
import * as responses from "./wire/openai-responses.mjs";

/** Every timestamp in a context is this (pi's own timestamps are normalised by the harnesses). */
export const T0 = 1757540514000;
/** The API key sent everywhere: never a real secret. */
export const KEY = "test-key";
/**
 * What openai-codex-responses takes as a key: a ChatGPT OAuth token, a JWT whose auth claim
 * names the account (unsigned: never a real token).
 */
export const CODEX_KEY = `eyJhbGciOiJub25lIn0.${Buffer.from(JSON.stringify({ "https://api.openai.com/auth": { chatgpt_account_id: "acct-pi-fixtures" } })).toString("base64url")}.test-signature`;

const SYSTEM = "You are a helpful assistant. Answer briefly.";
const WEATHER_TOOL = {
  name: "get_weather",
  description: "Returns the current weather for a city.",
  parameters: {
    type: "object",
    properties: {
      city: { type: "string", description: "City name, e.g. Zürich" },
      unit: { type: "string", enum: ["celsius", "fahrenheit"] },
    },
    required: ["city"],
  },
};
const TIME_TOOL = {
  name: "get_time",
  description: "Returns the local time in a city.",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};

const ANTHROPIC_SIGNATURE = "EqQBCkgIBxABGAIiQL3j8mJ0Lr2nq1ZkQ8cL0WfG4m9X6s1vY7tB3bH2cKpD5eA8uN0rJ4iE6oT9wS+/==";
const RESPONSES_ENCRYPTED = "gAAAAABowfCmR8sJ2vX0kq9LmZpT3yWbN4sHd1FXk3vQp9LmT2wRz7YbN4sHd1F_8a7b6c5d4e3f2g1h0iJkLmNoPqRsTuVwXyZ-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789==";
const GOOGLE_SIGNATURE = "CiQBcsjafLnOVr3Xnkbn3sSuYqvxP0mMhI8BBRMTqpYE0hXMBYMKZgFyyNp8Qz7Kb1Q2wV9x+/dF3d5WJm3pN4h8eT0aLsYrG0uVc1Ew2iZx";

/**
 * Per wire API: the wire builder, the catalog models (plain and reasoning; `api` and `baseUrl`
 * overridden), the wire model names, pi's provider-specific reasoning options for `stream`, the
 * thinking signature the wire carries, tool-call ids in the API's style, and which optional
 * scenarios apply.
 */
export const APIS = {
  "openai-completions": {
    wire: completions,
    model: ["openai", "gpt-4o-mini", "/v1"],
    reasoningModel: ["openai", "o4-mini", "/v1"],
    wireModel: "gpt-4o-mini-2024-07-18",
    reasoningWireModel: "o4-mini-2025-04-16",
    thinkingOptions: { reasoningEffort: "high" },
    toolIds: ["call_Xk3vQp9LmT2wRz7YbN4sHd1F", "call_Bq8nM2vL5xT9wR3kP7yZ1cA6"],
    replaySignature: "reasoning_content",
    toolChoice: "auto",
    extra: ["in_stream_error", "http_429_then_success"],
  },
  "openai-responses": {
    wire: responses,
    model: ["openai", "gpt-4o-mini", "/v1"],
    reasoningModel: ["openai", "gpt-5-mini", "/v1"],
    wireModel: "gpt-4o-mini-2024-07-18",
    reasoningWireModel: "gpt-5-mini-2025-08-07",
    thinkingOptions: { reasoningEffort: "high" },
    thinkingSignature: RESPONSES_ENCRYPTED,
    toolIds: ["call_Xk3vQp9LmT2wRz7YbN4sHd1F|fc_68c1f0a6e4a081a0c1d2e3f4a5b6c7d8", "call_Bq8nM2vL5xT9wR3kP7yZ1cA6|fc_68c1f0a7f5b181a0d2e3f4a5b6c7d8e9"],
    extra: ["in_stream_error", "response_failed"],
  },
  "azure-openai-responses": {
    wire: responses,
    model: ["azure-openai-responses", "gpt-4.1-mini", "/openai/v1"],
    reasoningModel: ["azure-openai-responses", "gpt-5-mini", "/openai/v1"],
    wireModel: "gpt-4.1-mini-2025-04-14",
    reasoningWireModel: "gpt-5-mini-2025-08-07",
    thinkingOptions: { reasoningEffort: "high" },
    thinkingSignature: RESPONSES_ENCRYPTED,
    toolIds: ["call_Xk3vQp9LmT2wRz7YbN4sHd1F|fc_68c1f0a6e4a081a0c1d2e3f4a5b6c7d8", "call_Bq8nM2vL5xT9wR3kP7yZ1cA6|fc_68c1f0a7f5b181a0d2e3f4a5b6c7d8e9"],
    only: ["plain_text", "thinking_text", "tool_call", "http_429", "replay_thinking_tool_result"],
  },
  "anthropic-messages": {
    wire: anthropic,
    model: ["anthropic", "claude-sonnet-4-5", ""],
    reasoningModel: ["anthropic", "claude-sonnet-4-5", ""],
    wireModel: "claude-sonnet-4-5-20250929",
    reasoningWireModel: "claude-sonnet-4-5-20250929",
    thinkingOptions: { thinkingEnabled: true, thinkingBudgetTokens: 2048 },
    thinkingSignature: ANTHROPIC_SIGNATURE,
    toolIds: ["toolu_01A09q90qw90lq917835lq9", "toolu_01B7xKp4Rm2sT9vWq3nL8eYz"],
    toolChoice: "auto",
    cacheWrite: true,
    extra: ["in_stream_error", "http_429_then_success"],
  },
  "google-generative-ai": {
    wire: google,
    model: ["google", "gemini-2.5-flash", "/v1beta"],
    reasoningModel: ["google", "gemini-2.5-flash", "/v1beta"],
    wireModel: "gemini-2.5-flash",
    reasoningWireModel: "gemini-2.5-flash",
    thinkingOptions: { thinking: { enabled: true, budgetTokens: 2048 } },
    thinkingSignature: GOOGLE_SIGNATURE,
    toolIds: ["get_weather_7f3a9c", "get_time_2b8e1d"],
    toolChoice: "auto",
    extra: ["in_stream_error"],
  },
  "google-vertex": {
    wire: google,
    model: ["google-vertex", "gemini-2.5-flash", "/v1"],
    reasoningModel: ["google-vertex", "gemini-2.5-flash", "/v1"],
    wireModel: "gemini-2.5-flash",
    reasoningWireModel: "gemini-2.5-flash",
    thinkingOptions: { thinking: { enabled: true, budgetTokens: 2048 } },
    thinkingSignature: GOOGLE_SIGNATURE,
    toolIds: ["get_weather_7f3a9c", "get_time_2b8e1d"],
    toolChoice: "auto",
    extra: ["in_stream_error"],
  },
  // pi's Codex loop retries HTTP failures by itself (1 s, 2 s, 4 s) whatever maxRetries says, so
  // the HTTP-error scenarios are replayed by core/tests/openai_codex.rs instead. SSE transport:
  // Node 20 has no WebSocket (pi would try one first, then fall back).
  "openai-codex-responses": {
    wire: responses,
    model: ["openai-codex", "gpt-5.1-codex-mini", ""],
    reasoningModel: ["openai-codex", "gpt-5.2-codex", ""],
    wireModel: "gpt-5.1-codex-mini",
    reasoningWireModel: "gpt-5.2-codex",
    thinkingOptions: { reasoningEffort: "high" },
    thinkingSignature: RESPONSES_ENCRYPTED,
    toolIds: ["call_Xk3vQp9LmT2wRz7YbN4sHd1F|fc_68c1f0a6e4a081a0c1d2e3f4a5b6c7d8", "call_Bq8nM2vL5xT9wR3kP7yZ1cA6|fc_68c1f0a7f5b181a0d2e3f4a5b6c7d8e9"],
    key: CODEX_KEY,
    options: { transport: "sse" },
    extra: ["in_stream_error", "response_failed"],
    exclude: ["http_429", "http_500"],
  },
  "mistral-conversations": {
    wire: mistral,
    model: ["mistral", "mistral-large-latest", ""],
    reasoningModel: ["mistral", "magistral-medium-latest", ""],
    wireModel: "mistral-large-latest",
    reasoningWireModel: "magistral-medium-latest",
    thinkingOptions: { promptMode: "reasoning" },
    toolIds: ["D681PevKs", "Xa9Lm2QwZ"],
    toolChoice: "auto",
    extra: [],
  },
};

const TEXT = ["Hello! ", "Bonjour — ünïcödé ✓ ", "🌍 How can I help?"];
const THINKING = ["The user greets me. ", "I should answer kindly — ✓."];
const USAGE = { input: 25, output: 12, cacheRead: 0, cacheWrite: 0 };
const weatherArgs = (city) => [`{"city"`, `: "${city}`, `", "unit": "celsius"}`];

/** Byte length of SSE pieces. */
const bytes = (pieces) => pieces.reduce((n, p) => n + Buffer.byteLength(p.sse), 0);
/** Index of the `n`th (1-based) piece marked `mark`. */
function nth(pieces, mark, n) {
  let seen = 0;
  const index = pieces.findIndex((p) => p.mark === mark && ++seen === n);
  if (index < 0) throw new Error(`no ${mark} #${n}`);
  return index;
}
const sse = (pieces) => pieces.map((p) => p.sse);

/** Model JSON from pi's catalog with `api` and `baseUrl` (`{MOCK}` + suffix) replaced. */
function catalogModel(ai, api, [provider, id, suffix]) {
  const model = ai.getModel(provider, id);
  if (!model) throw new Error(`no catalog model ${provider}/${id}`);
  return { ...structuredClone(model), api, baseUrl: `{MOCK}${suffix}` };
}

/** The assistant turn + tool result replayed by `replay_thinking_tool_result`. */
function history(api, cfg, model) {
  const thinking = { type: "thinking", thinking: "The user wants the weather in Zürich. I'll call get_weather." };
  const text = { type: "text", text: "Let me check the weather in Zürich." };
  if (api === "anthropic-messages") thinking.thinkingSignature = ANTHROPIC_SIGNATURE;
  if (api === "openai-completions") thinking.thinkingSignature = "reasoning_content";
  const google = api === "google-generative-ai" || api === "google-vertex";
  if (google) thinking.thinkingSignature = GOOGLE_SIGNATURE;
  if (api.endsWith("openai-responses") || api === "openai-codex-responses") {
    thinking.thinkingSignature = JSON.stringify({
      type: "reasoning",
      id: "rs_68c1f0a3c8e081a0a1b2c3d4e5f60718",
      summary: [{ type: "summary_text", text: thinking.thinking }],
      encrypted_content: RESPONSES_ENCRYPTED,
    });
    text.textSignature = JSON.stringify({ v: 1, id: "msg_68c1f0a5d2f481a0b9c8d7e6f5a4b3c2", phase: "commentary" });
  }
  const call = { type: "toolCall", id: cfg.toolIds[0], name: "get_weather", arguments: { city: "Zürich", unit: "celsius" } };
  if (google) call.thoughtSignature = GOOGLE_SIGNATURE;
  return [
    { role: "user", content: "What's the weather in Zürich?", timestamp: T0 },
    {
      role: "assistant",
      content: [thinking, text, call],
      api,
      provider: model.provider,
      model: model.id,
      responseId: "resp_prev_0001",
      usage: { input: 120, output: 48, cacheRead: 0, cacheWrite: 0, totalTokens: 168, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
      stopReason: "toolUse",
      timestamp: T0 + 1000,
    },
    {
      role: "toolResult",
      toolCallId: cfg.toolIds[0],
      toolName: "get_weather",
      content: [{ type: "text", text: "18°C, sunny, wind 6 km/h" }],
      details: { source: "mock" },
      isError: false,
      timestamp: T0 + 2000,
    },
  ];
}

/** Every AI-level scenario of `api`: [{api, name, description, call, model, context, options, replies, abortAfter?}]. */
export function scenariosFor(ai, api) {
  const cfg = APIS[api];
  const wire = cfg.wire;
  const plainModel = catalogModel(ai, api, cfg.model);
  const reasoningModel = catalogModel(ai, api, cfg.reasoningModel);
  const build = (spec, reasoning = false) => wire.build(spec, { model: reasoning ? cfg.reasoningWireModel : cfg.wireModel });
  const userContext = (tools) => ({
    systemPrompt: SYSTEM,
    messages: [{ role: "user", content: tools ? "What's the weather in Zürich and the time in Tokyo?" : "Hi there!", timestamp: T0 }],
    ...(tools ? { tools } : {}),
  });
  const base = { apiKey: cfg.key ?? KEY, maxRetries: 0, ...cfg.options };
  const plain = () => build({ blocks: [{ type: "text", deltas: TEXT }], stop: "stop", usage: USAGE });
  const thinkingSpec = {
    blocks: [{ type: "thinking", deltas: THINKING, signature: cfg.thinkingSignature }, { type: "text", deltas: TEXT }],
    stop: "stop",
    usage: { ...USAGE, output: 40, reasoning: 28 },
  };
  const out = [];
  const add = (name, description, fields) => out.push({ api, name, description, call: "stream", model: plainModel, context: userContext(), options: base, ...fields });

  add("plain_text", "Text in three deltas (multi-byte UTF-8), stop; temperature set.", {
    options: { ...base, temperature: 0.5 },
    replies: [{ sse: sse(plain()) }],
  });
  add("thinking_text", "Thinking then text through pi's stream with the provider's own reasoning options.", {
    model: reasoningModel,
    options: { ...base, ...cfg.thinkingOptions },
    replies: [{ sse: sse(build(thinkingSpec, true)) }],
  });
  add("thinking_text_simple", "The same reply through pi's streamSimple with reasoning: high.", {
    call: "streamSimple",
    model: reasoningModel,
    options: { ...base, reasoning: "high" },
    replies: [{ sse: sse(build(thinkingSpec, true)) }],
  });
  const tools = [WEATHER_TOOL, TIME_TOOL];
  const toolOptions = cfg.toolChoice ? { ...base, toolChoice: cfg.toolChoice } : base;
  add("tool_call", "One tool call with streamed arguments; toolChoice where pi's stream takes it.", {
    context: userContext(tools),
    options: toolOptions,
    replies: [{ sse: sse(build({ blocks: [{ type: "toolCall", id: cfg.toolIds[0], name: "get_weather", args: weatherArgs("Zürich") }], stop: "toolUse", usage: USAGE })) }],
  });
  add("parallel_tool_calls", "Two tool calls in one turn.", {
    context: userContext(tools),
    replies: [{
      sse: sse(build({
        blocks: [
          { type: "toolCall", id: cfg.toolIds[0], name: "get_weather", args: weatherArgs("Zürich") },
          { type: "toolCall", id: cfg.toolIds[1], name: "get_time", args: [`{"city":`, ` "Tokyo"}`] },
        ],
        stop: "toolUse",
        usage: USAGE,
      })),
    }],
  });
  add("text_then_tool_call", "Text, then a tool call in the same turn.", {
    context: userContext(tools),
    replies: [{
      sse: sse(build({
        blocks: [{ type: "text", deltas: ["Let me check ", "the weather."] }, { type: "toolCall", id: cfg.toolIds[0], name: "get_weather", args: weatherArgs("Zürich") }],
        stop: "toolUse",
        usage: USAGE,
      })),
    }],
  });
  add("length_stop", "Output cut at maxTokens: the provider's length stop.", {
    options: { ...base, maxTokens: 8 },
    replies: [{ sse: sse(build({ blocks: [{ type: "text", deltas: ["The history of ", "Zürich begins"] }], stop: "length", usage: { ...USAGE, output: 8 } })) }],
  });
  add("usage_cache_cost", "Cache-read (and, where the API has it, cache-write) tokens priced with the catalog's costs; sessionId set.", {
    options: { ...base, sessionId: "session-7f3a9c" },
    replies: [{
      sse: sse(build({
        blocks: [{ type: "text", deltas: TEXT }],
        stop: "stop",
        usage: { input: 1200, output: 85, cacheRead: 3072, cacheWrite: cfg.cacheWrite ? 512 : 0 },
        usageForm: "full",
      })),
    }],
  });
  for (const status of [429, 500]) {
    add(`http_${status}`, `HTTP ${status} with the API's JSON error body; no retries (maxRetries: 0).`, { replies: [wire.httpError(status)] });
  }
  {
    const pieces = plain();
    const cut = nth(pieces, "text_delta", 2) + 1;
    add("dropped_mid_stream", "The connection closes abruptly (no chunked terminator) after the second text delta.", {
      replies: [{ sse: sse(pieces), drop_after_bytes: bytes(pieces.slice(0, cut)) }],
    });
    add("truncated_stream", "The body ends cleanly after the second text delta, before the protocol's terminal event.", {
      replies: [{ sse: sse(pieces.slice(0, cut)) }],
    });
  }
  {
    const pieces = plain();
    const at = nth(pieces, "text_delta", 1) + 1;
    add("malformed_chunk", "An event whose JSON is cut off, after the first text delta; valid events follow.", {
      replies: [{ sse: [...sse(pieces.slice(0, at)), wire.malformed(), ...sse(pieces.slice(at))] }],
    });
  }
  if (cfg.extra?.includes("in_stream_error") && wire.streamError) {
    const pieces = plain();
    const cut = nth(pieces, "text_delta", 2) + 1;
    add("in_stream_error", "The API's in-stream error event after the second text delta.", {
      replies: [{ sse: [...sse(pieces.slice(0, cut)), ...sse(wire.streamError())] }],
    });
  }
  if (cfg.extra?.includes("response_failed")) {
    const pieces = plain();
    const cut = nth(pieces, "text_delta", 2) + 1;
    add("response_failed", "response.failed after the second text delta.", {
      replies: [{ sse: [...sse(pieces.slice(0, cut)), ...sse(wire.responseFailed())] }],
    });
  }
  {
    const pieces = plain();
    const stallAt = bytes(pieces.slice(0, nth(pieces, "text_delta", 1) + 1));
    add("abort_mid_stream", "The caller aborts when the first text delta arrives; the server stalls right after it, so the abort always lands there.", {
      abortAfter: "text_delta",
      replies: [{ sse: sse(pieces), stall_after_bytes: stallAt, stall_ms: 60000 }],
    });
  }
  add("replay_thinking_tool_result", "Second turn: the assistant's thinking (signed) + text + tool call and the tool result are converted into the request.", {
    model: reasoningModel,
    context: { systemPrompt: SYSTEM, messages: history(api, cfg, reasoningModel), tools: [WEATHER_TOOL] },
    replies: [{ sse: sse(build({ blocks: [{ type: "text", deltas: ["It's 18°C and sunny ", "in Zürich."] }], stop: "stop", usage: { ...USAGE, input: 210 } })) }],
  });
  if (cfg.extra?.includes("http_429_then_success")) {
    const error = wire.httpError(429);
    add("http_429_then_success", "HTTP 429 with retry-after-ms: 10, then success, with the default retries (no maxRetries option): pi's SDK retries once.", {
      options: { apiKey: cfg.key ?? KEY, ...cfg.options },
      replies: [{ ...error, headers: { ...error.headers, "retry-after": undefined, "retry-after-ms": "10" } }, { sse: sse(plain()) }],
    });
  }
  const selected = (cfg.only ? out.filter((s) => cfg.only.includes(s.name)) : out).filter((s) => !cfg.exclude?.includes(s.name));
  return selected.map((s) => ({ ...s, replies: JSON.parse(JSON.stringify(s.replies)) }));
}
