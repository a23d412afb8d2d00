// Anthropic Messages SSE: `event:` + `data:` pairs, message_start / content_block_* /
// message_delta / message_stop, with a `ping` after the first block opens, as api.anthropic.com
// streams them.

const MESSAGE_ID = "msg_01Fx7Qm3ZtYkR9bW2nHcVd4E";
const STOP = { stop: "end_turn", length: "max_tokens", toolUse: "tool_use" };

function event(type, data) {
  return `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
}

/** Builds the SSE pieces of one streamed message (see ../scenarios.mjs for `spec`). */
export function build(spec, { model = "claude-sonnet-4-5-20250929", id = MESSAGE_ID } = {}) {
  const u = spec.usage;
  const pieces = [
    {
      sse: event("message_start", {
        message: {
          id,
          type: "message",
          role: "assistant",
          model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: {
            input_tokens: u.input,
            cache_creation_input_tokens: u.cacheWrite,
            cache_read_input_tokens: u.cacheRead,
            cache_creation: { ephemeral_5m_input_tokens: u.cacheWrite, ephemeral_1h_input_tokens: 0 },
            output_tokens: 1,
            service_tier: "standard",
          },
        },
      }),
    },
  ];
  spec.blocks.forEach((block, index) => {
    if (block.type === "thinking") {
      pieces.push({ sse: event("content_block_start", { index, content_block: { type: "thinking", thinking: "", signature: "" } }) });
      for (const d of block.deltas) {
        pieces.push({ sse: event("content_block_delta", { index, delta: { type: "thinking_delta", thinking: d } }), mark: "thinking_delta" });
      }
      pieces.push({ sse: event("content_block_delta", { index, delta: { type: "signature_delta", signature: block.signature } }) });
    } else if (block.type === "text") {
      pieces.push({ sse: event("content_block_start", { index, content_block: { type: "text", text: "" } }) });
      for (const d of block.deltas) {
        pieces.push({ sse: event("content_block_delta", { index, delta: { type: "text_delta", text: d } }), mark: "text_delta" });
      }
    } else if (block.type === "toolCall") {
      pieces.push({ sse: event("content_block_start", { index, content_block: { type: "tool_use", id: block.id, name: block.name, input: {} } }) });
      for (const a of ["", ...block.args]) {
        pieces.push({ sse: event("content_block_delta", { index, delta: { type: "input_json_delta", partial_json: a } }), mark: "toolcall_delta" });
      }
    }
    if (index === 0) pieces.push({ sse: event("ping", {}) });
    pieces.push({ sse: event("content_block_stop", { index }) });
  });
  // The long usage form (every counter repeated) is what the API sends today; the short form
  // (output only) is what older gateways send. The cache scenario uses the long one.
  const usage = spec.usageForm === "full"
    ? { input_tokens: u.input, cache_creation_input_tokens: u.cacheWrite, cache_read_input_tokens: u.cacheRead, output_tokens: u.output }
    : { output_tokens: u.output };
  pieces.push({ sse: event("message_delta", { delta: { stop_reason: STOP[spec.stop], stop_sequence: null }, usage }), mark: "finish" });
  pieces.push({ sse: event("message_stop", {}), mark: "terminal" });
  return pieces;
}

/** A delta whose JSON is cut off. */
export function malformed() {
  return `event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"oops"\n\n`;
}

/** The `error` event the API sends mid-stream when it is overloaded. */
export function streamError() {
  return [{ sse: event("error", { error: { type: "overloaded_error", message: "Overloaded" }, request_id: "req_011CVx8kQ2rT7vLmN3pZ8sYd" }) }];
}

/** A non-streamed error response. */
export function httpError(status) {
  if (status === 429) {
    return {
      status,
      headers: { "request-id": "req_011CVx8kQ2rT7vLmN3pZ8sYd", "retry-after": "12", "anthropic-ratelimit-tokens-remaining": "0" },
      body: {
        type: "error",
        error: { type: "rate_limit_error", message: "This request would exceed the rate limit for your organization (7b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0) of 450,000 input tokens per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits." },
        request_id: "req_011CVx8kQ2rT7vLmN3pZ8sYd",
      },
    };
  }
  return {
    status,
    headers: { "request-id": "req_011CVy9mR3sU8wMnO4qA9tZe" },
    body: { type: "error", error: { type: "api_error", message: "Internal server error" }, request_id: "req_011CVy9mR3sU8wMnO4qA9tZe" },
  };
}
