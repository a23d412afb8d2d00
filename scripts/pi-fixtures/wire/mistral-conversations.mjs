// Mistral chat completions SSE (api.mistral.ai/v1/chat/completions with stream:true): OpenAI-like
// chunks; Magistral thinking as `content: [{"type":"thinking","thinking":[{"type":"text",...}]}]`;
// tool calls arrive whole in one chunk with 9-character ids; usage on the finish chunk; then
// `data: [DONE]`.

const ID = "e5cc70bb28c444948073e77776eb30ef";
const CREATED = 1757540514;
const FINISH = { stop: "stop", length: "length", toolUse: "tool_calls" };

/** Builds the SSE pieces of one streamed completion (see ../scenarios.mjs for `spec`). */
export function build(spec, { model = "mistral-large-latest" } = {}) {
  const head = { id: ID, object: "chat.completion.chunk", created: CREATED, model };
  const chunk = (delta, finish = null, usage) => ({
    sse: `data: ${JSON.stringify({ ...head, choices: [{ index: 0, delta, finish_reason: finish }], ...(usage ? { usage } : {}) })}\n\n`,
  });
  const pieces = [chunk({ role: "assistant", content: "" })];
  let callIndex = 0;
  for (const block of spec.blocks) {
    if (block.type === "thinking") {
      for (const d of block.deltas) {
        pieces.push({ ...chunk({ content: [{ type: "thinking", thinking: [{ type: "text", text: d }] }] }), mark: "thinking_delta" });
      }
    } else if (block.type === "text") {
      for (const d of block.deltas) pieces.push({ ...chunk({ content: d }), mark: "text_delta" });
    } else if (block.type === "toolCall") {
      const index = callIndex++;
      pieces.push({ ...chunk({ tool_calls: [{ id: block.id, function: { name: block.name, arguments: block.args.join("") }, index }] }), mark: "toolcall_delta" });
    }
  }
  const u = spec.usage;
  const usage = { prompt_tokens: u.input, total_tokens: u.input + u.output, completion_tokens: u.output };
  pieces.push({ ...chunk({ content: "" }, FINISH[spec.stop], usage), mark: "finish" });
  pieces.push({ sse: "data: [DONE]\n\n", mark: "terminal" });
  return pieces;
}

/** A chunk whose JSON is cut off. */
export function malformed() {
  return `data: {"id":"${ID}","object":"chat.completion.chunk","created":${CREATED},"model":"mistral-large-latest","choices":[{"index":0,"delta":{"content":"oops"}\n\n`;
}

/** A non-streamed error response. */
export function httpError(status) {
  if (status === 429) {
    return {
      status,
      body: { object: "error", message: "Requests rate limit exceeded", type: "rate_limited", param: null, code: "1300" },
    };
  }
  return {
    status,
    body: { object: "error", message: "Internal server error", type: "internal_server_error", param: null, code: "3000" },
  };
}
