// Client of the project's `pi-mock-server` binary (tests/mock_server): spawns it, scripts replies
// through `POST /_mock/replies`, reads the request log through `GET /_mock/requests`.

import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

/**
 * Request headers that say which HTTP client sent the request rather than what the provider
 * asked for (transport, SDK identification, an SDK's empty `cookie`). They are left out of
 * fixtures, and the replay harnesses leave them out of our requests too, as well as
 * `accept: *\/*` (fetch's default: no preference). Every other header is compared.
 */
export const IGNORED_HEADER = /^(host|content-length|connection|accept-encoding|accept-language|user-agent|cookie|sec-fetch-mode|x-stainless-.*|x-goog-api-client)$/;

export class MockServer {
  /** Starts the binary at `path` and waits for its `{"url","port"}` line. */
  static async start(path) {
    const child = spawn(path, [], { stdio: ["pipe", "pipe", "inherit"] });
    const lines = createInterface({ input: child.stdout });
    const first = await new Promise((resolve, reject) => {
      child.once("error", reject);
      child.once("exit", (code) => reject(new Error(`pi-mock-server exited with ${code}`)));
      lines.once("line", resolve);
    });
    const { port } = JSON.parse(first);
    return new MockServer(child, port);
  }

  constructor(child, port) {
    this.child = child;
    this.port = port;
    /** `http://127.0.0.1:PORT`: what `{MOCK}` in a fixture's model stands for. */
    this.origin = `http://127.0.0.1:${port}`;
  }

  async call(method, path, body) {
    const response = await fetch(`${this.origin}${path}`, {
      method,
      headers: { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
    return text ? JSON.parse(text) : null;
  }

  reset() {
    return this.call("POST", "/_mock/reset", {});
  }

  push(replies) {
    return this.call("POST", "/_mock/replies", replies);
  }

  /** The requests received since the last reset, headers as an object without `IGNORED_HEADER`. */
  async requests() {
    const log = await this.call("GET", "/_mock/requests");
    return log.map(({ method, path, headers, body }) => {
      const kept = {};
      for (const [name, value] of headers) {
        if (IGNORED_HEADER.test(name) || (name === "accept" && value === "*/*")) continue;
        kept[name] = name in kept ? `${kept[name]}, ${value}` : value;
      }
      return { method, path, headers: kept, body };
    });
  }

  stop() {
    // The server exits when its stdin closes.
    this.child.stdin.end();
  }
}
