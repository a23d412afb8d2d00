// The pi-ai (Node) concurrency client of the overhead benchmark: STREAMS @mariozechner/pi-ai
// `stream` calls at once, each text_delta read (run.sh installs pi-ai into a scratch directory,
// PIAI_DIR). Prints one JSON line (see concurrency_run.py); `rss_released_kb` is RSS after
// a forced GC when node runs with --expose-gc, else equal to `rss_after_kb`.
//
//   node piai_concurrency.mjs PORT STREAMS FRAMES INTERVAL_US
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const root = join(process.env.PIAI_DIR, "node_modules", "@mariozechner", "pi-ai");
const entry = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).exports["."].import;
const { stream } = await import(pathToFileURL(join(root, entry)).href);

const [port, streams, frames, interval] = process.argv.slice(2).map(Number);
const model = (id) => ({
  id,
  name: id,
  api: "openai-completions",
  provider: "openai",
  baseUrl: `http://127.0.0.1:${port}/v1`,
  reasoning: false,
  input: ["text"],
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  contextWindow: 128000,
  maxTokens: 4096,
});
const context = { messages: [{ role: "user", content: "go", timestamp: 0 }] };
const statusKb = (field) => {
  const line = readFileSync("/proc/self/status", "utf8").split("\n").find((l) => l.startsWith(field));
  return line ? Number(line.split(/\s+/)[1]) : -1;
};
const STALL_NS = 10_000_000;

async function one(m, delays) {
  let count = 0;
  for await (const event of stream(m, context, { apiKey: "k", maxRetries: 0 })) {
    if (event.type === "error") throw new Error(event.error?.errorMessage ?? "error");
    if (event.type !== "text_delta") continue;
    count++;
    delays.push(Number(process.hrtime.bigint() - BigInt(event.delta.split(" ", 1)[0])));
  }
  return count;
}

await one(model("paced-1-0"), []);
globalThis.gc?.();
const idle = statusKb("VmRSS:");
const delays = [];
const start = process.hrtime.bigint();
const paced = model(`paced-${frames}-${interval}`);
const counts = await Promise.all(Array.from({ length: streams }, () => one(paced, delays)));
const wall = Number(process.hrtime.bigint() - start) / 1e9;
const peak = statusKb("VmHWM:");
await new Promise((resolve) => setTimeout(resolve, 500));
const after = statusKb("VmRSS:");
globalThis.gc?.();
const released = statusKb("VmRSS:");
delays.sort((a, b) => a - b);
const pick = (p) => (delays.length ? delays[Math.floor((delays.length - 1) * p)] : 0);
console.log(
  JSON.stringify({
    streams,
    frames: counts.reduce((a, b) => a + b, 0),
    wall_s: wall,
    late_frames: delays.filter((d) => d > STALL_NS).length,
    p50_ms: pick(0.5) / 1e6,
    p99_ms: pick(0.99) / 1e6,
    max_late_ms: (delays.at(-1) ?? 0) / 1e6,
    rss_idle_kb: idle,
    rss_peak_kb: peak,
    kib_per_stream: (peak - idle) / streams,
    rss_after_kb: after,
    rss_released_kb: released,
  }),
);
