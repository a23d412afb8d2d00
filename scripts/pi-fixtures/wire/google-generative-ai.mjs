// Gemini `streamGenerateContent?alt=sse`: `data:` lines separated by CRLF CRLF (as
// generativelanguage.googleapis.com sends them), each a whole GenerateContentResponse with one
// candidate; usage metadata on every chunk, the finish reason and full usage on the last one.
// Function calls arrive whole, never streamed.

const RESPONSE_ID = "kTn1aJ2pLOWbz7IPpLy7mQ4";
const FINISH = { stop: "STOP", length: "MAX_TOKENS", toolUse: "STOP" };

/** Builds the SSE pieces of one streamed response (see ../scenarios.mjs for `spec`). */
export function build(spec, { model = "gemini-2.5-flash" } = {}) {
  const u = spec.usage;
  const prompt = u.input + u.cacheRead;
  const promptUsage = { promptTokenCount: prompt, totalTokenCount: prompt, promptTokensDetails: [{ modality: "TEXT", tokenCount: prompt }] };
  const chunk = (parts, extra = {}, usage = promptUsage) =>
    `data: ${JSON.stringify({
      candidates: [{ content: { parts, role: "model" }, ...extra, index: 0 }],
      usageMetadata: usage,
      modelVersion: model,
      responseId: RESPONSE_ID,
    })}\r\n\r\n`;
  // Gemini puts the thought signature of a thinking turn on its first function call, or on
  // the last text part when there is none.
  const signature = spec.blocks.find((b) => b.type === "thinking")?.signature;
  const parts = [];
  let signed = false;
  for (const block of spec.blocks) {
    if (block.type === "thinking") {
      for (const d of block.deltas) parts.push({ part: { text: d, thought: true }, mark: "thinking_delta" });
    } else if (block.type === "text") {
      for (const d of block.deltas) parts.push({ part: { text: d }, mark: "text_delta" });
    } else if (block.type === "toolCall") {
      const functionCall = { name: block.name, args: JSON.parse(block.args.join("")) };
      if (block.id) functionCall.id = block.id;
      const part = { functionCall };
      if (signature && !signed) {
        part.thoughtSignature = signature;
        signed = true;
      }
      parts.push({ part, mark: "toolcall_delta" });
    }
  }
  if (signature && !signed) {
    const lastText = parts.findLast((p) => p.mark === "text_delta");
    if (lastText) lastText.part.thoughtSignature = signature;
  }
  const finalUsage = {
    promptTokenCount: prompt,
    candidatesTokenCount: u.output - (u.reasoning ?? 0),
    totalTokenCount: prompt + u.output,
    promptTokensDetails: [{ modality: "TEXT", tokenCount: prompt }],
    ...(u.cacheRead ? { cachedContentTokenCount: u.cacheRead, cacheTokensDetails: [{ modality: "TEXT", tokenCount: u.cacheRead }] } : {}),
    ...(u.reasoning ? { thoughtsTokenCount: u.reasoning } : {}),
  };
  const pieces = parts.map(({ part, mark }, i) => {
    const last = i === parts.length - 1;
    return last
      ? { sse: chunk([part], { finishReason: FINISH[spec.stop] }, finalUsage), mark }
      : { sse: chunk([part]), mark };
  });
  return pieces;
}

/** A chunk whose JSON is cut off. */
export function malformed() {
  return `data: {"candidates": [{"content": {"parts": [{"text": "oops"}],"role": "model"},"index": 0}\r\n\r\n`;
}

/** The error object Gemini sends in the stream when generation fails midway. */
export function streamError() {
  return [{ sse: `data: ${JSON.stringify({ error: { code: 500, message: "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting", status: "INTERNAL" } })}\r\n\r\n` }];
}

/** A non-streamed error response. */
export function httpError(status) {
  if (status === 429) {
    return {
      status,
      body: {
        error: {
          code: 429,
          message: "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.",
          status: "RESOURCE_EXHAUSTED",
          details: [{ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "17s" }],
        },
      },
    };
  }
  return {
    status,
    body: { error: { code: 500, message: "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting", status: "INTERNAL" } },
  };
}
