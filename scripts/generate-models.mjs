#!/usr/bin/env node
// Regenerates core/src/ai/models.json, the built-in model catalog, from the published
// @mariozechner/pi-ai package, so the Rust port ships exactly the models pi ships.
//
// Usage (the package is installed in a scratch folder outside the repo):
//
//   mkdir -p /tmp/piai && cd /tmp/piai && npm init -y >/dev/null
//   npm install @mariozechner/pi-ai@0.73.1
//   node /path/to/repo/scripts/generate-models.mjs            # finds ./node_modules/@mariozechner/pi-ai
//
// or from anywhere, naming the package folder:
//
//   node scripts/generate-models.mjs /tmp/piai/node_modules/@mariozechner/pi-ai
//
// Options:
//   --out <file>   where to write (default: core/src/ai/models.json next to this script)
//   --check        write nothing; exit 1 if the file on disk differs from what would be written
//
// The output is an object { "_generated": <note>, "<provider>": { "<model id>": <Model> } } with
// providers and ids sorted, and each model's fields in pi's `Model` order (types.ts): id, name,
// api, provider, baseUrl, reasoning, thinkingLevelMap?, input, cost, contextWindow, maxTokens,
// headers?, compat?. A field pi adds in a later release fails the run instead of being dropped.

import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const PACKAGE = "@mariozechner/pi-ai";
const VERSION = "0.73.1";
const EXPECTED_MODELS = 969;
const EXPECTED_PROVIDERS = 31;

const MODEL_FIELDS = [
	"id",
	"name",
	"api",
	"provider",
	"baseUrl",
	"reasoning",
	"thinkingLevelMap",
	"input",
	"cost",
	"contextWindow",
	"maxTokens",
	"headers",
	"compat",
];
const REQUIRED_FIELDS = ["id", "name", "api", "provider", "baseUrl", "reasoning", "input", "cost", "contextWindow", "maxTokens"];
const COST_FIELDS = ["input", "output", "cacheRead", "cacheWrite"];
const THINKING_LEVELS = ["off", "minimal", "low", "medium", "high", "xhigh"];

function fail(message) {
	console.error(`generate-models: ${message}`);
	process.exit(1);
}

// Arguments.
const args = process.argv.slice(2);
let packageDir;
let outFile = resolve(dirname(fileURLToPath(import.meta.url)), "../core/src/ai/models.json");
let check = false;
for (let i = 0; i < args.length; i++) {
	const arg = args[i];
	if (arg === "--out") {
		outFile = resolve(args[++i] ?? fail("--out needs a file"));
	} else if (arg === "--check") {
		check = true;
	} else if (arg.startsWith("-")) {
		fail(`unknown option ${arg}`);
	} else {
		packageDir = resolve(arg);
	}
}
packageDir ??= join(process.cwd(), "node_modules", ...PACKAGE.split("/"));

const manifestPath = join(packageDir, "package.json");
if (!existsSync(manifestPath)) {
	fail(`no ${PACKAGE} at ${packageDir}; run from the folder where it is installed, or pass its path`);
}
const manifest = JSON.parse(readFileSync(manifestPath, "utf8"));
if (manifest.name !== PACKAGE || manifest.version !== VERSION) {
	fail(`expected ${PACKAGE}@${VERSION} at ${packageDir}, found ${manifest.name}@${manifest.version}`);
}

// pi's own registry (models.ts: getProviders/getModels over models.generated.ts).
const pi = await import(pathToFileURL(join(packageDir, manifest.main ?? "dist/index.js")).href);
if (typeof pi.getProviders !== "function" || typeof pi.getModels !== "function") {
	fail(`${PACKAGE} does not export getProviders/getModels`);
}

// Default JS sort compares UTF-16 code units; ids are ASCII, so this matches Rust's byte order.
const byCodeUnit = (a, b) => (a < b ? -1 : a > b ? 1 : 0);

function orderedThinkingLevelMap(map, where) {
	const out = {};
	for (const level of THINKING_LEVELS) {
		if (Object.hasOwn(map, level)) out[level] = map[level];
	}
	for (const key of Object.keys(map).sort(byCodeUnit)) {
		if (!THINKING_LEVELS.includes(key)) fail(`${where}: unknown thinking level ${key}`);
	}
	for (const [key, value] of Object.entries(out)) {
		if (value !== null && typeof value !== "string") fail(`${where}: thinkingLevelMap.${key} is not a string or null`);
	}
	return out;
}

function shapeModel(model, provider, id) {
	const where = `${provider}/${id}`;
	for (const key of Object.keys(model)) {
		if (!MODEL_FIELDS.includes(key)) fail(`${where}: field ${key} is not in the Rust Model; extend the script and core's Model`);
	}
	for (const key of REQUIRED_FIELDS) {
		if (model[key] === undefined) fail(`${where}: missing ${key}`);
	}
	if (model.id !== id || model.provider !== provider) fail(`${where}: id/provider disagree with the registry keys`);
	for (const key of ["contextWindow", "maxTokens"]) {
		if (!Number.isSafeInteger(model[key]) || model[key] < 0) fail(`${where}: ${key} is not a non-negative integer`);
	}
	const costKeys = Object.keys(model.cost);
	if (costKeys.length !== COST_FIELDS.length || !COST_FIELDS.every((k) => typeof model.cost[k] === "number")) {
		fail(`${where}: cost has keys ${costKeys.join(",")}`);
	}
	for (const modality of model.input) {
		if (modality !== "text" && modality !== "image") fail(`${where}: unknown input ${modality}`);
	}
	if (model.headers !== undefined) {
		for (const [name, value] of Object.entries(model.headers)) {
			if (typeof value !== "string") fail(`${where}: header ${name} is not a string`);
		}
	}

	const out = {};
	for (const key of MODEL_FIELDS) {
		if (model[key] === undefined) continue;
		if (key === "cost") {
			out.cost = Object.fromEntries(COST_FIELDS.map((k) => [k, model.cost[k]]));
		} else if (key === "thinkingLevelMap") {
			out.thinkingLevelMap = orderedThinkingLevelMap(model.thinkingLevelMap, where);
		} else {
			// headers and compat keep pi's key order.
			out[key] = structuredClone(model[key]);
		}
	}
	return out;
}

const catalog = {
	_generated: `Generated from ${PACKAGE}@${VERSION} by scripts/generate-models.mjs. Do not edit by hand; rerun the script.`,
};
let modelCount = 0;
const providers = [...pi.getProviders()].sort(byCodeUnit);
for (const provider of providers) {
	if (provider.startsWith("_")) fail(`provider ${provider} clashes with the metadata key`);
	const models = pi.getModels(provider);
	const ids = models.map((m) => m.id).sort(byCodeUnit);
	if (new Set(ids).size !== ids.length) fail(`${provider}: duplicate model ids`);
	const byId = new Map(models.map((m) => [m.id, m]));
	catalog[provider] = {};
	for (const id of ids) {
		if (!/^[\x20-\x7e]+$/.test(id)) fail(`${provider}/${id}: id is not printable ASCII`);
		catalog[provider][id] = shapeModel(byId.get(id), provider, id);
		modelCount++;
	}
}

console.log(`${PACKAGE}@${VERSION}: ${modelCount} models in ${providers.length} providers`);
if (modelCount !== EXPECTED_MODELS || providers.length !== EXPECTED_PROVIDERS) {
	fail(`expected ${EXPECTED_MODELS} models in ${EXPECTED_PROVIDERS} providers`);
}

const text = `${JSON.stringify(catalog, null, 2)}\n`;
if (check) {
	const current = existsSync(outFile) ? readFileSync(outFile, "utf8") : "";
	if (current !== text) fail(`${outFile} is out of date; rerun without --check`);
	console.log(`${outFile} is up to date`);
} else {
	writeFileSync(outFile, text);
	console.log(`wrote ${outFile} (${text.length} bytes)`);
}
