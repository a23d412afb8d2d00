// The pi-ai (Node) client of the overhead benchmark: @mariozechner/pi-ai's `stream`, installed
// by run.sh into a scratch directory (NODE_PATH points there), each text_delta read.
//
//   node piai_client.mjs PORT ROUNDS FRAMES INTERVAL_US BURST
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

// ESM ignores NODE_PATH, and the package exports only an `import` entry: load it from the
// scratch directory by its package.json.
const root = join(process.env.PIAI_DIR, "node_modules", "@mariozechner", "pi-ai");
const entry = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).exports["."].import;
const { stream } = await import(pathToFileURL(join(root, entry)).href);

const [port, rounds, frames, interval, burst] = process.argv.slice(2);
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
const cpuSeconds = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

async function request(m, lat) {
  let first = 0n;
  for await (const event of stream(m, context, { apiKey: "k" })) {
    if (event.type !== "text_delta") continue;
    const now = process.hrtime.bigint();
    if (!first) first = now;
    if (lat) lat.push(Number(now - BigInt(event.delta.split(" ", 1)[0])));
  }
  return first;
}

const idle = statusKb("VmRSS:");
const ttfe = [];
const lat = [];
const paced = model(`paced-${frames}-${interval}`);
for (let r = 0; r < Number(rounds); r++) {
  const start = process.hrtime.bigint();
  ttfe.push(Number((await request(paced, lat)) - start));
}
let cpu = cpuSeconds();
await request(model(`burst-${burst}`), null);
cpu = cpuSeconds() - cpu;
console.log(
  JSON.stringify({
    ttfe_ns: ttfe,
    lat_ns: lat,
    cpu_s: cpu,
    burst: Number(burst),
    rss_idle_kb: idle,
    rss_peak_kb: statusKb("VmHWM:"),
    rss_after_kb: statusKb("VmRSS:"),
  }),
);
