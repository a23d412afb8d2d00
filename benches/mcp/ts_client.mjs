// The TypeScript SDK's own client doing what core/benches/mcp_roundtrip.rs measures: N calls of
// the reference server's `echo` over stdio and over Streamable HTTP, one at a time. Prints the
// mean round trip in microseconds. Run by the Rust benchmark (same server, same N); the SDK is
// the one server-everything depends on, from the npm cache.
//
//   node benches/mcp/ts_client.mjs <node_modules dir> <server-everything index.js> <http url> <n>
import { pathToFileURL } from "node:url";
import path from "node:path";

const [modules, entry, url, countText] = process.argv.slice(2);
const count = Number(countText);
const sdk = (p) => import(pathToFileURL(path.join(modules, "@modelcontextprotocol/sdk/dist/esm", p)).href);
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");

async function measure(transport) {
  const client = new Client({ name: "bench", version: "1" });
  await client.connect(transport);
  for (let i = 0; i < 20; i++) await client.callTool({ name: "echo", arguments: { message: "warm" } });
  const start = process.hrtime.bigint();
  for (let i = 0; i < count; i++) {
    await client.callTool({ name: "echo", arguments: { message: "hello" } });
  }
  const micros = Number(process.hrtime.bigint() - start) / 1000 / count;
  await client.close();
  return micros;
}

const stdio = await measure(new StdioClientTransport({ command: "node", args: [entry, "stdio"], stderr: "ignore" }));
const http = await measure(new StreamableHTTPClientTransport(new URL(url)));
console.log(JSON.stringify({ stdio_us: stdio, http_us: http }));
