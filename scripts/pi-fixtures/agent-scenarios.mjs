// The agent-level scenarios: pi-agent-core's `Agent` (default stream function, i.e. pi-ai's
// `streamSimple`) against the mock server. Tools are data: each returns `results[toolCallId]`
// (the ids come from the scripted replies), so every layer can rebuild them exactly whatever
// order parallel calls run in.

import * as anthropic from "./wire/anthropic-messages.mjs";
import * as completions from "./wire/openai-completions.mjs";
import { KEY } from "./scenarios.mjs";

const SYSTEM = "You are a helpful assistant. Use the tools when they help.";
const USAGE = { input: 60, output: 14, cacheRead: 0, cacheWrite: 0 };

const CALCULATOR = {
  name: "calculator",
  label: "Calculator",
  description: "Evaluates an arithmetic expression.",
  parameters: { type: "object", properties: { expression: { type: "string" } }, required: ["expression"] },
};
const WEATHER = {
  name: "get_weather",
  label: "Weather",
  description: "Returns the current weather for a city.",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};
const ADD = {
  name: "add",
  label: "Add",
  description: "Adds two numbers.",
  parameters: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] },
};

const text = (s, details) => ({ content: [{ type: "text", text: s }], details });

function wireFor(api) {
  if (api === "openai-completions") return { wire: completions, model: ["openai", "gpt-4o-mini", "/v1"], ids: ["call_Ag1kQ2rT7vLmN3pZ8sYd4WcA", "call_Ag2nM2vL5xT9wR3kP7yZ1cA6", "call_Ag3pL8wQ1zX4cV7bN2mK5jH9"] };
  return { wire: anthropic, model: ["anthropic", "claude-sonnet-4-5", ""], ids: ["toolu_01Ag1q90qw90lq917835lq9", "toolu_01Ag2xKp4Rm2sT9vWq3nL8eYz", "toolu_01Ag3vB7nM2kL9pQ4rT6wY1x"] };
}

/** Every agent scenario: [{api, name, description, model, agent, tools, prompts, replies}]. */
export function agentScenarios(ai) {
  const out = [];
  for (const api of ["openai-completions", "anthropic-messages"]) {
    const { wire, model: [provider, id, suffix], ids } = wireFor(api);
    const model = { ...structuredClone(ai.getModel(provider, id)), api, baseUrl: `{MOCK}${suffix}` };
    let reply = 0;
    const respond = (blocks, stop) => ({ sse: wire.build({ blocks, stop, usage: USAGE }, { id: `${api === "anthropic-messages" ? "msg_01Agent" : "chatcmpl-agent"}${++reply}` }).map((p) => p.sse) });
    const call = (i, name, args) => ({ type: "toolCall", id: ids[i], name, args: [args.slice(0, 6), args.slice(6)] });
    const say = (...deltas) => ({ type: "text", deltas });
    const add = (name, description, fields) => out.push({ api, name, description, model, agent: { systemPrompt: SYSTEM, thinkingLevel: "off", toolExecution: "parallel" }, ...fields });

    reply = 0;
    add("agent_multi_turn_tool", "Two prompts; each makes the model call the calculator, whose text result it reads in the next turn.", {
      tools: [{ ...CALCULATOR, results: { [ids[0]]: text("42", { exact: true }), [ids[1]]: text("84", { exact: true }) } }],
      prompts: ["What is 6 * 7?", "And twice that?"],
      replies: [
        respond([call(0, "calculator", `{"expression": "6 * 7"}`)], "toolUse"),
        respond([say("6 × 7 = ", "42.")], "stop"),
        respond([say("Let me double it. "), call(1, "calculator", `{"expression": "42 * 2"}`)], "toolUse"),
        respond([say("Twice that is ", "84 ✓")], "stop"),
      ],
    });
    if (api !== "openai-completions") continue;

    reply = 0;
    add("agent_parallel_tools", "One turn with two calls of the same tool, executed in parallel; results in the assistant's order.", {
      tools: [{ ...WEATHER, results: { [ids[0]]: text("18°C, sunny", { city: "Zürich" }), [ids[1]]: text("24°C, cloudy", { city: "Tokyo" }) } }],
      prompts: ["Weather in Zürich and Tokyo?"],
      replies: [
        respond([call(0, "get_weather", `{"city": "Zürich"}`), call(1, "get_weather", `{"city": "Tokyo"}`)], "toolUse"),
        respond([say("Zürich: 18°C, sunny. ", "Tokyo: 24°C, cloudy.")], "stop"),
      ],
    });
    reply = 0;
    add("agent_invalid_arguments", "The model sends a string that is not a number and leaves out a required field: pi's validation report goes back to the model; the tool never runs.", {
      tools: [{ ...ADD, results: {} }],
      prompts: ["Add two and three."],
      replies: [
        respond([call(0, "add", `{"a": "two"}`)], "toolUse"),
        respond([say("Sorry, I sent bad arguments.")], "stop"),
      ],
    });
    reply = 0;
    add("agent_unknown_tool", "The model calls a tool the agent does not have: an error result, and the run goes on.", {
      tools: [{ ...CALCULATOR, results: {} }],
      prompts: ["Search the web for pi."],
      replies: [
        respond([call(0, "search_web", `{"query": "pi"}`)], "toolUse"),
        respond([say("I cannot search the web.")], "stop"),
      ],
    });
  }
  return out;
}

/** The API key pi's agent gets through `getApiKey`, and ours through its request options. */
export const AGENT_OPTIONS = { apiKey: KEY };
