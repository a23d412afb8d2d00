// OpenAI Responses SSE (also Azure's): `event:` + `data:` pairs with `sequence_number`, output
// items (reasoning / message / function_call) opened, streamed and closed, then
// `response.completed` (or `response.incomplete` at the token limit) with the whole response.

const RESPONSE_ID = "resp_68c1f0a2b3d481a09b7e5c4d3f2a1b0c";
const CREATED = 1757540514;

/** Builds the SSE pieces of one streamed response (see ../scenarios.mjs for `spec`). */
export function build(spec, { model = "gpt-4o-mini-2024-07-18" } = {}) {
  let seq = 0;
  const ev = (type, data) => `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...data })}\n\n`;
  const response = (status, extra = {}) => ({
    id: RESPONSE_ID,
    object: "response",
    created_at: CREATED,
    status,
    background: false,
    error: null,
    incomplete_details: null,
    instructions: null,
    max_output_tokens: null,
    model,
    output: [],
    parallel_tool_calls: true,
    previous_response_id: null,
    reasoning: { effort: null, summary: null },
    service_tier: "auto",
    store: false,
    temperature: 1.0,
    text: { format: { type: "text" }, verbosity: "medium" },
    tool_choice: "auto",
    tools: [],
    top_p: 1.0,
    truncation: "disabled",
    usage: null,
    ...extra,
  });
  const pieces = [
    { sse: ev("response.created", { response: response("in_progress") }) },
    { sse: ev("response.in_progress", { response: response("in_progress") }) },
  ];
  const output = [];
  spec.blocks.forEach((block, outputIndex) => {
    if (block.type === "thinking") {
      const id = "rs_68c1f0a3c8e081a0a1b2c3d4e5f60718";
      const encrypted = block.signature;
      pieces.push({ sse: ev("response.output_item.added", { output_index: outputIndex, item: { id, type: "reasoning", encrypted_content: encrypted, summary: [] } }) });
      pieces.push({ sse: ev("response.reasoning_summary_part.added", { item_id: id, output_index: outputIndex, summary_index: 0, part: { type: "summary_text", text: "" } }) });
      for (const d of block.deltas) {
        pieces.push({ sse: ev("response.reasoning_summary_text.delta", { item_id: id, output_index: outputIndex, summary_index: 0, delta: d, obfuscation: "q8Zr" }), mark: "thinking_delta" });
      }
      const text = block.deltas.join("");
      pieces.push({ sse: ev("response.reasoning_summary_text.done", { item_id: id, output_index: outputIndex, summary_index: 0, text }) });
      pieces.push({ sse: ev("response.reasoning_summary_part.done", { item_id: id, output_index: outputIndex, summary_index: 0, part: { type: "summary_text", text } }) });
      const item = { id, type: "reasoning", encrypted_content: encrypted, summary: [{ type: "summary_text", text }] };
      output.push(item);
      pieces.push({ sse: ev("response.output_item.done", { output_index: outputIndex, item }) });
    } else if (block.type === "text") {
      const id = "msg_68c1f0a5d2f481a0b9c8d7e6f5a4b3c2";
      pieces.push({ sse: ev("response.output_item.added", { output_index: outputIndex, item: { id, type: "message", status: "in_progress", content: [], role: "assistant" } }) });
      pieces.push({ sse: ev("response.content_part.added", { item_id: id, output_index: outputIndex, content_index: 0, part: { type: "output_text", annotations: [], logprobs: [], text: "" } }) });
      for (const d of block.deltas) {
        pieces.push({ sse: ev("response.output_text.delta", { item_id: id, output_index: outputIndex, content_index: 0, delta: d, logprobs: [], obfuscation: "Zk2" }), mark: "text_delta" });
      }
      const text = block.deltas.join("");
      const part = { type: "output_text", annotations: [], logprobs: [], text };
      pieces.push({ sse: ev("response.output_text.done", { item_id: id, output_index: outputIndex, content_index: 0, text, logprobs: [] }) });
      pieces.push({ sse: ev("response.content_part.done", { item_id: id, output_index: outputIndex, content_index: 0, part }) });
      const status = spec.stop === "length" ? "incomplete" : "completed";
      const item = { id, type: "message", status, content: [part], role: "assistant" };
      output.push(item);
      pieces.push({ sse: ev("response.output_item.done", { output_index: outputIndex, item }) });
    } else if (block.type === "toolCall") {
      const [callId, itemId] = block.id.split("|");
      pieces.push({ sse: ev("response.output_item.added", { output_index: outputIndex, item: { id: itemId, type: "function_call", status: "in_progress", arguments: "", call_id: callId, name: block.name } }) });
      for (const a of block.args) {
        pieces.push({ sse: ev("response.function_call_arguments.delta", { item_id: itemId, output_index: outputIndex, delta: a, obfuscation: "xY" }), mark: "toolcall_delta" });
      }
      const args = block.args.join("");
      pieces.push({ sse: ev("response.function_call_arguments.done", { item_id: itemId, output_index: outputIndex, arguments: args }) });
      const item = { id: itemId, type: "function_call", status: "completed", arguments: args, call_id: callId, name: block.name };
      output.push(item);
      pieces.push({ sse: ev("response.output_item.done", { output_index: outputIndex, item }) });
    }
  });
  const u = spec.usage;
  const usage = {
    input_tokens: u.input + u.cacheRead,
    input_tokens_details: { cached_tokens: u.cacheRead },
    output_tokens: u.output,
    output_tokens_details: { reasoning_tokens: u.reasoning ?? 0 },
    total_tokens: u.input + u.cacheRead + u.output,
  };
  if (spec.stop === "length") {
    pieces.push({
      sse: ev("response.incomplete", { response: response("incomplete", { incomplete_details: { reason: "max_output_tokens" }, output, usage }) }),
      mark: "terminal",
    });
  } else {
    pieces.push({ sse: ev("response.completed", { response: response("completed", { output, usage }) }), mark: "terminal" });
  }
  return pieces;
}

/** An event whose JSON is cut off. */
export function malformed() {
  return `event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":6,"item_id":"msg_68c1f0a5d2f481a0b9c8d7e6f5a4b3c2","output_index":0,"content_index":0,"delta":"oops"\n\n`;
}

/** The `error` event the API sends mid-stream. */
export function streamError() {
  return [{ sse: `event: error\ndata: ${JSON.stringify({ type: "error", sequence_number: 90, code: "server_error", message: "An error occurred while processing your request. You can retry your request, or contact us through our help center at help.openai.com if the error persists. Please include the request ID req_4f3e2d1c0b9a8f7e6d5c4b3a29181706 in your message.", param: null })}\n\n` }];
}

/** `response.failed`: the response ended with status `failed`. */
export function responseFailed() {
  const response = {
    id: RESPONSE_ID,
    object: "response",
    created_at: CREATED,
    status: "failed",
    error: { code: "server_error", message: "The model produced invalid content. Consider modifying your prompt if you are seeing this error persistently." },
    incomplete_details: null,
    output: [],
    usage: null,
  };
  return [{ sse: `event: response.failed\ndata: ${JSON.stringify({ type: "response.failed", sequence_number: 91, response })}\n\n` }];
}

/** A non-streamed error response. */
export function httpError(status) {
  if (status === 429) {
    return {
      status,
      headers: { "x-request-id": "req_8f3c2a1b9d7e4f60a5b4c3d2e1f0a9b8" },
      body: {
        error: {
          message: "Rate limit reached for gpt-4o-mini in organization org-Xk3vQp9LmT2wRz7Y on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in 120ms. Visit https://platform.openai.com/account/rate-limits to learn more.",
          type: "requests",
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
