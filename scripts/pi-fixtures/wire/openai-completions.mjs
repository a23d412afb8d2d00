// OpenAI Chat Completions SSE, as api.openai.com (and llama.cpp/vLLM/DeepSeek for
// `reasoning_content`) stream it: one `data:` line per chunk, usage in a last chunk with empty
// `choices` (stream_options.include_usage), then `data: [DONE]`.

const ID = "chatcmpl-CJx9kQ2rT7vLmN3pZ8sYd4WcA1eF0";
const CREATED = 1757540514;
const FINISH = { stop: "stop", length: "length", toolUse: "tool_calls" };

/** Builds the SSE pieces of one streamed completion (see ../scenarios.mjs for `spec`). */
export function build(spec, { model = "gpt-4o-mini-2024-07-18", id = ID } = {}) {
  const head = { id, object: "chat.completion.chunk", created: CREATED, model, service_tier: "default", system_fingerprint: "fp_560af6e559" };
  const chunk = (delta, finish = null) => ({
    sse: `data: ${JSON.stringify({ ...head, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`,
  });
  const pieces = [chunk({ role: "assistant", content: "", refusal: null })];
  let callIndex = 0;
  for (const block of spec.blocks) {
    if (block.type === "thinking") {
      for (const d of block.deltas) pieces.push({ ...chunk({ reasoning_content: d }), mark: "thinking_delta" });
    } else if (block.type === "text") {
      for (const d of block.deltas) pieces.push({ ...chunk({ content: d }), mark: "text_delta" });
    } else if (block.type === "toolCall") {
      const index = callIndex++;
      pieces.push(chunk({ tool_calls: [{ index, id: block.id, type: "function", function: { name: block.name, arguments: "" } }] }));
      for (const a of block.args) {
        pieces.push({ ...chunk({ tool_calls: [{ index, function: { arguments: a } }] }), mark: "toolcall_delta" });
      }
    }
  }
  pieces.push({ ...chunk({}, FINISH[spec.stop]), mark: "finish" });
  const u = spec.usage;
  const usage = {
    prompt_tokens: u.input + u.cacheRead,
    completion_tokens: u.output,
    total_tokens: u.input + u.cacheRead + u.output,
    prompt_tokens_details: { cached_tokens: u.cacheRead, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: u.reasoning ?? 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  };
  pieces.push({ sse: `data: ${JSON.stringify({ ...head, choices: [], usage })}\n\n`, mark: "usage" });
  pieces.push({ sse: "data: [DONE]\n\n", mark: "terminal" });
  return pieces;
}

/** A chunk whose JSON is cut off. */
export function malformed() {
  return `data: {"id":"${ID}","object":"chat.completion.chunk","created":${CREATED},"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{"content":"oops"}\n\n`;
}

/** An error object in the stream (the OpenAI SDK raises it as an APIError). */
export function streamError() {
  const error = {
    message: "The server had an error processing your request. Sorry about that! You can retry your request, or contact us through our help center at help.openai.com if you keep seeing this error.",
    type: "server_error",
    param: null,
    code: null,
  };
  return [{ sse: `data: ${JSON.stringify({ error })}\n\n` }];
}

/** A non-streamed error response. */
export function httpError(status) {
  if (status === 429) {
    return {
      status,
      headers: { "x-request-id": "req_8f3c2a1b9d7e4f60a5b4c3d2e1f0a9b8", "x-ratelimit-remaining-tokens": "0" },
      body: {
        error: {
          message: "Rate limit reached for gpt-4o-mini in organization org-Xk3vQp9LmT2wRz7Y on tokens per min (TPM): Limit 200000, Used 199820, Requested 1650. Please try again in 440ms. Visit https://platform.openai.com/account/rate-limits to learn more.",
          type: "tokens",
          param: null,
          code: "rate_limit_exceeded",
        },
      },
    };
  }
  return {
    status,
    headers: { "x-request-id": "req_1a2b3c4d5e6f708192a3b4c5d6e7f809" },
    body: { error: { message: "The server had an error while processing your request. Sorry about that!", type: "server_error", param: null, code: null } },
  };
}
