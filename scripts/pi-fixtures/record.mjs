#!/usr/bin/env node
// Records what pi (@mariozechner/pi-ai + @mariozechner/pi-agent-core 0.73.1) does against the
// project's mock server, one fixture per scenario, under tests/fixtures/pi/<api>/<scenario>.json.
//
//   node scripts/pi-fixtures/record.mjs <dir holding node_modules/@mariozechner/pi-ai> \
//        [--mock <pi-mock-server binary>] [--out <dir>] [--only <substring>]
//
// See README.md next to this file.

import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { AGENT_OPTIONS, agentScenarios } from "./agent-scenarios.mjs";
import { MockServer } from "./mock.mjs";
import { APIS, scenariosFor } from "./scenarios.mjs";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
/** A run that has not ended after this long is recorded as hung (pi's `result()` can hang). */
const HANG_MS = 20000;

function parseArgs(argv) {
  const args = { mock: join(process.env.CARGO_TARGET_DIR ?? join(REPO, "target"), "debug/pi-mock-server"), out: join(REPO, "tests/fixtures/pi"), only: null };
  const rest = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--mock") args.mock = argv[++i];
    else if (argv[i] === "--out") args.out = argv[++i];
    else if (argv[i] === "--only") args.only = argv[++i];
    else rest.push(argv[i]);
  }
  if (rest.length !== 1) {
    console.error("usage: record.mjs <pi install dir> [--mock BIN] [--out DIR] [--only SUBSTRING]");
    process.exit(2);
  }
  args.pi = resolve(rest[0]);
  return args;
}

async function importPi(dir) {
  const load = (pkg) => import(pathToFileURL(join(dir, "node_modules/@mariozechner", pkg, "dist/index.js")).href);
  const [ai, agent] = await Promise.all([load("pi-ai"), load("pi-agent-core")]);
  const version = JSON.parse(await (await import("node:fs/promises")).readFile(join(dir, "node_modules/@mariozechner/pi-ai/package.json"), "utf8")).version;
  return { ai, agent, version };
}

/** A JSON copy (pi mutates the objects it emits as the stream goes on). */
const copy = (value) => (value === undefined ? undefined : JSON.parse(JSON.stringify(value)));

/** An AssistantMessageEvent without `partial` (our events deliberately do not carry it). */
function streamEvent(event) {
  const { partial: _partial, ...rest } = event;
  return copy(rest);
}

/** An AgentEvent as recorded: `message_update` keeps its provider event (without `partial`) and drops `message`. */
function agentEvent(event) {
  if (event.type === "message_update") {
    return { type: event.type, assistantMessageEvent: streamEvent(event.assistantMessageEvent) };
  }
  return copy(event);
}

const withTimeout = (promise, ms) =>
  Promise.race([promise, new Promise((resolve) => setTimeout(() => resolve({ timeout: true }), ms).unref())]);

async function runStream(pi, scenario, model) {
  const controller = new AbortController();
  const options = { ...scenario.options, signal: controller.signal };
  const fn = scenario.call === "streamSimple" ? pi.ai.streamSimple : pi.ai.stream;
  const events = [];
  const stream = fn(model, scenario.context, options);
  const iterator = stream[Symbol.asyncIterator]();
  let hung = false;
  for (;;) {
    const next = await withTimeout(iterator.next(), HANG_MS);
    if (next.timeout) {
      hung = true;
      break;
    }
    if (next.done) break;
    events.push(streamEvent(next.value));
    if (scenario.abortAfter === next.value.type && !controller.signal.aborted) controller.abort();
  }
  const result = hung ? { timeout: true } : await withTimeout(stream.result(), HANG_MS);
  if (hung || result.timeout) controller.abort();
  return { events, result: result.timeout ? null : copy(result), ...(hung || result.timeout ? { hung: true } : {}) };
}

async function runAgent(pi, scenario, model) {
  const tools = scenario.tools.map(({ results, ...tool }) => ({
    ...tool,
    execute: async (toolCallId) => {
      if (!(toolCallId in results)) throw new Error(`fixture: ${tool.name} has no result for ${toolCallId}`);
      return copy(results[toolCallId]);
    },
  }));
  const agent = new pi.agent.Agent({
    initialState: { systemPrompt: scenario.agent.systemPrompt, model, thinkingLevel: scenario.agent.thinkingLevel, tools },
    toolExecution: scenario.agent.toolExecution,
    getApiKey: () => AGENT_OPTIONS.apiKey,
  });
  const events = [];
  agent.subscribe((event) => {
    events.push(agentEvent(event));
  });
  for (const prompt of scenario.prompts) {
    const done = await withTimeout(agent.prompt(prompt).then(() => ({})), HANG_MS);
    if (done.timeout) {
      agent.abort();
      return { events, messages: copy(agent.state.messages), hung: true };
    }
  }
  return { events, messages: copy(agent.state.messages) };
}

/** Replaces `{MOCK}` in the model's base URL by the server's origin. */
function liveModel(model, mock) {
  return { ...model, baseUrl: model.baseUrl.replace("{MOCK}", mock.origin) };
}

async function record(pi, mock, scenario, kind) {
  await mock.reset();
  await mock.push(scenario.replies);
  const model = liveModel(scenario.model, mock);
  const run = kind === "agent" ? await runAgent(pi, scenario, model) : await runStream(pi, scenario, model);
  const requests = await mock.requests();
  const fixture = {
    _comment: `Recorded by scripts/pi-fixtures/record.mjs from @mariozechner/pi-ai and pi-agent-core ${pi.version} against pi-mock-server; do not edit by hand. {MOCK} stands for the mock server's http://127.0.0.1:PORT.`,
    kind,
    api: scenario.api,
    scenario: scenario.name,
    description: scenario.description,
    model: scenario.model,
  };
  if (kind === "agent") {
    Object.assign(fixture, {
      agent: scenario.agent,
      tools: scenario.tools,
      prompts: scenario.prompts,
      options: AGENT_OPTIONS,
    });
  } else {
    Object.assign(fixture, {
      call: scenario.call,
      context: scenario.context,
      options: scenario.options,
      ...(scenario.abortAfter ? { abortAfter: scenario.abortAfter } : {}),
    });
  }
  Object.assign(fixture, { replies: scenario.replies, requests, ...run });
  // The port changes from run to run; fixtures say {MOCK}.
  const text = JSON.stringify(fixture, null, 2).split(mock.origin).join("{MOCK}");
  return { text: `${text}\n`, fixture };
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const pi = await importPi(args.pi);
  for (const name of Object.keys(process.env)) {
    // Only the scripted key may reach the mock server, and no real endpoint may be configured.
    if (/_API_KEY$|^AZURE_OPENAI_|^PI_CACHE_RETENTION$/.test(name)) delete process.env[name];
  }
  const mock = await MockServer.start(args.mock);
  const jobs = [];
  for (const api of Object.keys(APIS)) for (const s of scenariosFor(pi.ai, api)) jobs.push([s, "stream"]);
  for (const s of agentScenarios(pi.ai)) jobs.push([s, "agent"]);
  let written = 0;
  try {
    for (const [scenario, kind] of jobs) {
      const id = `${scenario.api}/${scenario.name}`;
      if (args.only && !id.includes(args.only)) continue;
      const { text, fixture } = await record(pi, mock, scenario, kind);
      const path = join(args.out, scenario.api, `${scenario.name}.json`);
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, text);
      written++;
      const last = fixture.events.at(-1);
      const summary = kind === "agent" ? `${fixture.events.length} events, ${fixture.messages.length} messages` : `${fixture.events.length} events, ${last?.type} ${last?.reason ?? ""}`;
      console.log(`${id}: ${summary}, ${fixture.requests.length} request(s)${fixture.hung ? " (HUNG)" : ""}`);
    }
  } finally {
    mock.stop();
  }
  console.log(`${written} fixtures written to ${args.out}`);
}

await main();
