#!/usr/bin/env node
// Records what pi's tool-argument validation (`validateToolArguments` in @mariozechner/pi-ai,
// TypeBox's compiler plus pi's AJV-style coercion) does with a table of (schema, arguments)
// cases, into tests/fixtures/pi/validation.json. The Rust suite replays every case
// (core/tests/validation_fixture.rs) and requires byte-identical messages and identical
// coerced values.
//
// Usage (the package is installed in a scratch folder outside the repo):
//
//   mkdir -p /tmp/piai && cd /tmp/piai && npm init -y >/dev/null
//   npm install @mariozechner/pi-ai@0.73.1
//   node /path/to/repo/scripts/pi-fixtures/record-validation.mjs   # finds ./node_modules
//
// or name the package folder: `record-validation.mjs /tmp/piai/node_modules/@mariozechner/pi-ai`.
//
// Options:
//   --out <file>   where to write (default: tests/fixtures/pi/validation.json in this repo)
//   --check        write nothing; exit 1 if the file on disk differs from what would be written
//
// Each case is { name, tool, schema, arguments } (plus schemaJson / argumentsJson, the raw text,
// when JavaScript would reorder keys or respell numbers on parsing) and exactly one outcome:
//   "ok":     the (coerced) arguments pi returns;
//   "error":  the message of the validation error pi throws (what the model reads);
//   "thrown": the message of any other error (a schema TypeBox cannot compile, a runaway $ref);
//             these are JavaScript engine texts that the port does not copy word for word.
// Schemas and arguments go through JSON first, so pi sees exactly what the fixture holds.

import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const PACKAGE = "@mariozechner/pi-ai";
const VERSION = "0.73.1";

const args = process.argv.slice(2);
const here = dirname(fileURLToPath(import.meta.url));
let outFile = resolve(here, "..", "..", "tests", "fixtures", "pi", "validation.json");
let check = false;
let packageDir;
for (let i = 0; i < args.length; i++) {
	const arg = args[i];
	if (arg === "--out") {
		outFile = resolve(args[++i]);
	} else if (arg === "--check") {
		check = true;
	} else {
		packageDir = resolve(arg);
	}
}
packageDir ??= join(process.cwd(), "node_modules", ...PACKAGE.split("/"));

function fail(message) {
	console.error(`record-validation: ${message}`);
	process.exit(1);
}

if (!existsSync(join(packageDir, "package.json"))) fail(`no ${PACKAGE} at ${packageDir}`);
const pkg = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8"));
if (pkg.version !== VERSION) fail(`expected ${PACKAGE}@${VERSION}, found ${pkg.version}`);
const typeboxDir = join(packageDir, "..", "..", "typebox");
const typebox = JSON.parse(readFileSync(join(typeboxDir, "package.json"), "utf8")).version;
const { validateToolArguments } = await import(pathToFileURL(join(packageDir, "dist", "index.js")).href);

// ---------------------------------------------------------------------------------------------
// The table. Names are unique and say what the case shows.
// ---------------------------------------------------------------------------------------------

const cases = [];
function add(name, schema, args, tool = "t") {
	cases.push({ name, tool, schema, arguments: args });
}
const obj = (properties, extra = {}) => ({ type: "object", properties, ...extra });
// Cases whose key order or number spelling JavaScript would change on parsing keep their raw
// JSON text too (schemaJson / argumentsJson); the Rust test parses the raw text.
function addRaw(name, schemaJson, argumentsJson, tool = "t") {
	cases.push({ name, tool, schemaJson, argumentsJson });
}

// required
add("required/one-missing", obj({ a: { type: "string" }, b: { type: "number" } }, { required: ["a", "b"] }), {
	a: "x",
});
add("required/all-missing", obj({ a: { type: "string" }, b: { type: "number" } }, { required: ["a", "b"] }), {});
add("required/present", obj({ a: { type: "string" } }, { required: ["a"] }), { a: "x" });
add(
	"required/nested",
	obj({ user: obj({ name: { type: "string" }, age: { type: "integer" } }, { required: ["name", "age"] }) }, {
		required: ["user"],
	}),
	{ user: { age: 3 } },
);
add("required/without-type", { required: ["a"] }, {});
add("required/null-value-counts-as-present", obj({ a: {} }, { required: ["a"] }), { a: null });

// type
for (const [type, bad] of [
	["string", 1],
	["number", "x"],
	["integer", 1.5],
	["boolean", "maybe"],
	["null", "x"],
	["object", [1]],
	["array", { a: 1 }],
]) {
	add(`type/${type}`, obj({ v: { type } }), { v: bad });
}
add("type/string-given-array", obj({ v: { type: "string" } }), { v: [1] });
add("type/string-given-object", obj({ v: { type: "string" } }), { v: { a: 1 } });
add("type/number-given-object", obj({ v: { type: "number" } }), { v: {} });
add("type/boolean-given-array", obj({ v: { type: "boolean" } }), { v: [] });
add("type/null-given-object", obj({ v: { type: "null" } }), { v: {} });
add("type/huge-integer", obj({ v: { type: "integer" } }), { v: 1e300 });
add("type/xschema-undefined", obj({ v: { type: "undefined" } }), { v: 1 });
add("type/integer-accepts-whole-float", obj({ v: { type: "integer" } }), { v: 2.0 });
add("type/union-message", obj({ v: { type: ["string", "number"] } }), { v: [] });
add("type/union-three", obj({ v: { type: ["string", "integer", "null"] } }), { v: {} });
add("type/root-object-given-array", obj({ a: { type: "string" } }), [1, 2]);
add("type/root-object-given-string", obj({ a: { type: "string" } }, { required: ["a"] }), "text");
add("type/unknown-type-name", obj({ v: { type: "float" } }), { v: 1 });
add("type/not-a-string-is-ignored", obj({ v: { type: 12 } }), { v: 1 });
add("type/array-of-one", obj({ v: { type: ["boolean"] } }), { v: "x" });

// enum and const
add("enum/string", obj({ v: { type: "string", enum: ["a", "b"] } }), { v: "c" });
add("enum/ok", obj({ v: { type: "string", enum: ["a", "b"] } }), { v: "b" });
add("enum/mixed", obj({ v: { enum: [1, "1", null, { a: 1 }, [1]] } }), { v: { a: 2 } });
add("enum/object-member", obj({ v: { enum: [{ a: 1, b: [1, 2] }] } }), { v: { b: [1, 2], a: 1 } });
add("enum/type-and-enum", obj({ v: { type: "string", enum: ["a"] } }), { v: 5 });
add("const/string", obj({ v: { const: "x" } }), { v: "y" });
add("const/ok", obj({ v: { const: "x" } }), { v: "x" });
add("const/object", obj({ v: { const: { a: [1, { b: null }] } } }), { v: { a: [1, { b: false }] } });
add("const/object-ok", obj({ v: { const: { a: [1, { b: null }] } } }), { v: { a: [1, { b: null }] } });
add("const/null", obj({ v: { const: null } }), { v: 0 });

// numbers
add("number/minimum", obj({ v: { type: "number", minimum: 5 } }), { v: 4 });
add("number/maximum", obj({ v: { type: "number", maximum: 5 } }), { v: 6 });
add("number/minimum-ok-equal", obj({ v: { type: "number", minimum: 5, maximum: 5 } }), { v: 5 });
add("number/exclusive-minimum", obj({ v: { type: "number", exclusiveMinimum: 5 } }), { v: 5 });
add("number/exclusive-maximum", obj({ v: { type: "number", exclusiveMaximum: 5 } }), { v: 5 });
add("number/all-bounds", obj({ v: { minimum: 10, maximum: 0, exclusiveMinimum: 10, exclusiveMaximum: 0 } }), {
	v: 5,
});
add("number/fraction-limits", obj({ v: { type: "number", minimum: 0.5, maximum: 1.25 } }), { v: 0.25 });
add("number/big-limit", obj({ v: { type: "number", maximum: 1e21 } }), { v: 2e21 });
add("number/negative-limit", obj({ v: { type: "integer", minimum: -3 } }), { v: -4 });
add("number/multiple-of", obj({ v: { type: "number", multipleOf: 3 } }), { v: 10 });
add("number/multiple-of-fraction-ok", obj({ v: { type: "number", multipleOf: 0.1 } }), { v: 0.3 });
add("number/multiple-of-fraction-bad", obj({ v: { type: "number", multipleOf: 0.1 } }), { v: 0.35 });
add("number/multiple-of-half", obj({ v: { type: "number", multipleOf: 0.5 } }), { v: 7 });
add("number/limit-on-string-is-ignored", obj({ v: { minimum: 5 } }), { v: "3" });
add("number/bad-type-and-limit", obj({ v: { type: "integer", minimum: 5 } }), { v: 2.5 });

// strings
add("string/min-length", obj({ v: { type: "string", minLength: 3 } }), { v: "ab" });
add("string/max-length", obj({ v: { type: "string", maxLength: 3 } }), { v: "abcd" });
add("string/length-counts-code-points", obj({ v: { type: "string", maxLength: 2 } }), { v: "😀😀" });
add("string/length-code-points-over", obj({ v: { type: "string", maxLength: 2 } }), { v: "😀😀😀" });
add("string/min-length-emoji", obj({ v: { type: "string", minLength: 3 } }), { v: "😀😀" });
add("string/pattern", obj({ v: { type: "string", pattern: "^[a-z]+$" } }), { v: "abc1" });
add("string/pattern-ok", obj({ v: { type: "string", pattern: "^[a-z]+$" } }), { v: "abc" });
add("string/pattern-unanchored", obj({ v: { type: "string", pattern: "b" } }), { v: "abc" });
add("string/pattern-digits", obj({ v: { type: "string", pattern: "^\\d{4}-\\d{2}$" } }), { v: "2024-1" });
add("string/pattern-unicode-digit-is-not-digit", obj({ v: { pattern: "^\\d+$" } }), { v: "١٢٣" });
add("string/pattern-word", obj({ v: { pattern: "^\\w+$" } }), { v: "é" });
add("string/pattern-space", obj({ v: { pattern: "^\\s$" } }), { v: "\u00a0" });
add("string/pattern-dot-newline", obj({ v: { pattern: "^.$" } }), { v: "\n" });
add("string/pattern-dot-astral", obj({ v: { pattern: "^.$" } }), { v: "😀" });
add("string/pattern-lookahead", obj({ v: { pattern: "^(?!admin).*$" } }), { v: "administrator" });
add("string/pattern-backreference", obj({ v: { pattern: "^(a+)-\\1$" } }), { v: "aa-a" });
add("string/pattern-property-class", obj({ v: { pattern: "^\\p{Lu}" } }), { v: "abc" });
add("string/pattern-escaped-slash", obj({ v: { pattern: "^a\\/b$" } }), { v: "a/c" });
add("string/pattern-quote-in-message", obj({ v: { pattern: '^"[^"]*"$' } }), { v: "x" });
add("string/all-keywords", obj({ v: { type: "string", minLength: 5, maxLength: 1, format: "email", pattern: "^z" } }), {
	v: "abc",
});
add("string/keywords-on-number-ignored", obj({ v: { minLength: 5, pattern: "^z" } }), { v: 12 });

// formats
const formatCases = {
	email: ["a@b.co", "john.doe+tag@example.com", "no-at-sign", "a@b", "a@-b.com", '"quoted"@x.org', "A@B.COM", "a@[127.0.0.1]", "a@\u017f.com", "a@\u212a.com", "\u212a@x.com", "A@EXAMPLE.ORG"],
	"date-time": ["2024-02-29T12:30:00Z", "2023-02-29T12:30:00Z", "2024-01-01T25:00:00Z", "2024-01-01t10:00:00+02:00", "2024-01-01T10:00:00", "2024-01-01 10:00:00Z", "2016-12-31T23:59:60Z", "2024-01-01T10:00:00.123-05:30", "2024-01-01T10:00:00Z[Europe/Paris]", "2024-01-01T10:00:00Z[../x]"],
	date: ["2024-01-31", "2024-02-30", "2024-1-01", "20240101"],
	time: ["10:20:30Z", "10:20:30", "23:59:60Z", "24:00:00Z", "10:20:30.5+01:00"],
	duration: ["P1Y2M3DT4H5M6S", "PT1H", "P1W", "P", "PT", "1D"],
	uri: ["https://example.com/a?b=c#d", "mailto:a@b.com", "example.com", "http://[::1]:80/", "urn:isbn:123", "http://exa mple.com", "HTTP://EXAMPLE.COM"],
	"uri-reference": ["/relative/path", "../x?y", "http://x.y", "a b", ""],
	"uri-template": ["http://example.com/{id}", "http://example.com/{id", "/a{?x,y}"],
	url: ["https://example.com", "not a url", "file:///tmp/x", "http://"],
	uuid: ["123e4567-e89b-12d3-a456-426614174000", "123E4567-E89B-12D3-A456-426614174000", "123e4567e89b12d3a456426614174000", "g23e4567-e89b-12d3-a456-426614174000"],
	ipv4: ["192.168.0.1", "256.1.1.1", "1.2.3", "01.2.3.4"],
	ipv6: ["::1", "2001:db8::8a2e:370:7334", "2001:db8::g", "1:2:3:4:5:6:7:8:9", "::ffff:192.168.0.1"],
	hostname: ["example.com", "-bad.com", "a".repeat(64) + ".com", "ex_ample.com", "example.com.", "xn--bcher-kva.example", "ab--cd.com", "localhost"],
	"json-pointer": ["/a/b", "", "a/b", "/a~2"],
	"relative-json-pointer": ["0/a", "1#", "-1/a"],
	regex: ["^a+$", "(", "[a-z"],
	"unknown-format": ["anything"],
};
// More values per format, the edges of each grammar.
const moreFormatCases = {
	email: ["a@b.c", "a.b@c", ".a@b.com", "a.@b.com", "a..b@c.com", "a@b..com", "a@b.com.", "a@[IPv6:::1]", "a@[ipv6:::1]", "a+b@c-d.e", "\u00fc@x.com", "a@\u00fc.com", '"a b"@x.com', '"a\\"b"@x.com', `a@${"b".repeat(64)}.com`, "a@b_c.com", "A@[255.255.255.256]"],
	uri: ["a:b", "1a:b", "http://example.com/%zz", "http://example.com/%20", "http://\u00fc.com", "http://[v1.x]/", "http://user@host:8080/p?q#f", "foo://", "HTTP:x", "http:///x", "http://a/b c", "tel:+1-555"],
	"uri-reference": ["#frag", "?q", "//host/path", "%", "a%zz", "a:b", "http://x/\u00e9", "1a:b"],
	"uri-template": ["{", "}", "{+x}", "{x:3}", "{x*}", "a b", "{x,y}", "{x:0}", "%zz"],
	url: ["http://example.com:99999", "http://ex ample.com", "mailto:x", "javascript:alert(1)", "http://[::1]", "//x", "HTTP://X.COM", "http://example.com/\u00e9", "https://exa%mple.com", "http://1.2.3.256", "a:"],
	uuid: ["00000000-0000-0000-0000-000000000000", "{123e4567-e89b-12d3-a456-426614174000}", " 123e4567-e89b-12d3-a456-426614174000", "123e4567-e89b-12d3-a456-42661417400\u212a"],
	ipv4: ["0.0.0.0", "255.255.255.255", "1.2.3.4 ", "1.2.3.04", "1.2.3.4.5"],
	ipv6: ["::", "1::", "::ffff:1.2.3.4", "fe80::1%eth0", "2001:DB8::1", "1:2:3:4:5:6:7::", ":1:2::", "1:2:3:4:5:6:1.2.3.4", "::1.2.3.256"],
	hostname: ["a", "a.b", "1.2.3.4", "A-0.com", "xn--nxasmq6b.com", "xn--a.com", "XN--BCHER-KVA.example", "xn--bcher-kva-.example", "a".repeat(63), `${"a.".repeat(126)}ab`, `${"a.".repeat(127)}a`, "xn--ls8h.la", "xn--zz.example", "a..b", ".a"],
	"date-time": ["2024-01-01T00:00:00+24:00", "2024-01-01T00:00:00+23:59", "2024-01-01T23:59:60+01:00", "2024-01-01T00:59:60+01:00", "2024-01-01T10:00:00,5Z", "2024-01-01T10:00Z", "2024-01-01T10:00:00Z[+01:00]", "2024-01-01T10:00:00Z[!u-ca=hebrew]", "2024-01-01T10:00:00Z[Europe/Paris][u-ca=hebrew]", "2024-01-01T10:00:00Z[.]", "2024-01-01T10:00:00Z[a/..]", "2024-01-01T10:00:00Z[a/b.c]", "2024-01-01TT10:00:00Z", "\uff12024-01-01T10:00:00Z"],
	time: ["1:02:03Z", "10:20:30.Z", "10:20:30z", "10:20:30+0100", "10:20:30-24:00", "23:59:60-00:01", "00:00:60+00:01"],
	duration: ["P1D", "PT1M", "P1Y2W", "P1.5D", "PT0S", "p1d", "P1DT", "P1M1D"],
	"json-pointer": ["/", "/~0/~1", "/~", "~1", "/a\u00e9"],
	"relative-json-pointer": ["0", "01", "0#", "2/a/b", "0##", "10/x"],
	"json-pointer-uri-fragment": ["#", "#/a%20b", "#/a b", "#/%zz", "/a", "#/A~0"],
	regex: ["a(?=b)", "(?<n>a)\\k<n>", "\\p{L}", "a{1,2}", "a{2,1}", "\\", "(?<=a)b", "\\1(a)", "[a-", "(?i)a", "\\q"],
	"idn-email": ["\u00fc@\u00fc.com", "a@b-.com", "a@b.c-", '"x"@\u00fc.de', "a@b", "@b.c", "a@-b.c"],
	"idn-hostname": ["b\u00fccher.example", "\u00fc", "a-.com", "xn--bcher-kva.example", "a\u3002b", "\u0300a", "a b", "\uff41.com", "-a"],
	iri: ["http://\u00fc.com/\u00e4", "http://a b", "http://x/%zz", "mailto:\u00fc@x", "relative", "http://x/{y}"],
	"iri-reference": ["\u00e4/b", "http://\u00fc", "//x", "a://b", "%zz", "a//b", "#f"],
	date: ["0000-01-01", "9999-12-31", "2000-02-29", "1900-02-29", "2024-00-10", "2024-01-00", "2024-04-31", "\uff12024-01-01"],
};
for (const [format, values] of Object.entries(moreFormatCases)) {
	values.forEach((value, index) =>
		add(`format-more/${format}/${index}`, obj({ v: { type: "string", format } }), { v: value }),
	);
}
const patternCases = [
	["^[A-Z]{2,3}$", ["AB", "ab", "ABCD"]],
	["^\\S+$", ["a b", "ab"]],
	["\\bfoo\\b", ["a foo b", "afoo", "\u00e9foo"]],
	["^(?:\\+?1[-. ]?)?\\(?\\d{3}\\)?[-. ]?\\d{3}[-. ]?\\d{4}$", ["(555) 123-4567", "555-12-4567"]],
	["^[^@\\s]+@[^@\\s]+\\.[^@\\s]+$", ["a@b.c", "a b@c.d"]],
	["^\\p{L}+$", ["h\u00e9llo", "h3llo"]],
	["^[\\u4e00-\\u9fa5]+$", ["\u4e2d\u6587", "abc"]],
	["^.{3}$", ["a\nb", "\ud83d\ude00\ud83d\ude00\ud83d\ude00", "abc"]],
	["^[\\w.-]+$", ["a.b-c", "a b"]],
	["colou?r", ["the color", "colr"]],
	["^(a|b)*c$", ["ababc", "abd"]],
	["^\\d+(\\.\\d{1,2})?$", ["12.345", "12.34"]],
	["^\\$\\d+$", ["$12", "12"]],
	["^[\\]]$", ["]", "a"]],
	["^[\\^a]$", ["^", "b"]],
	["^[a-z]+$", ["ABC"]],
	["a{,2}", ["a"]],
	["(?i)abc", ["ABC"]],
	["(?i:abc)", ["ABC"]],
	["\\-", ["-"]],
	["^[\\d-x]$", ["-"]],
	["^\\x41\\u0042\\u{43}$", ["ABC"]],
	["^[\\s\\S]$", ["\n"]],
	["^(?<a>x)(?<b>y)\\k<a>$", ["xyx", "xyy"]],
	["^\\cA$", ["\u0001"]],
	["^\\0$", ["\u0000"]],
	["^[\\b]$", ["\b"]],
	["^\\P{L}$", ["1", "a"]],
	["^\\p{Script=Latin}+$", ["abc", "\u03b1"]],
	["[", ["x"]],
	["^a\\", ["a"]],
	["x{2,1}", ["xx"]],
	["^\\/$", ["/"]],
	["^[/]$", ["/"]],
	["^\\u{1F600}$", ["\ud83d\ude00"]],
	["^[\\ud83d\\ude00]$", ["\ud83d\ude00"]],
	["^\\p{Emoji}$", ["\ud83d\ude00"]],
];
patternCases.forEach(([pattern, values], p) =>
	values.forEach((value, index) =>
		add(`pattern-more/${p}/${index}`, obj({ v: { type: "string", pattern } }), { v: value }),
	),
);
add("coerce/nested-anyOf-in-properties-in-anyOf", obj({ v: { anyOf: [obj({ w: { anyOf: [{ type: "integer" }, { type: "boolean" }] } }, { required: ["w"] }), { type: "string" }] } }), { v: { w: "true" } });
add("coerce/array-null-union-empty-string", obj({ v: { type: ["array", "null"] } }), { v: "" });
add("coerce/boolean-null-union", obj({ v: { type: ["boolean", "null"] } }), { v: "true" });
add("coerce/integer-spaces-only", obj({ v: { type: "integer" } }), { v: "   " });
add("coerce/additional-properties-false-no-coercion", obj({ a: { type: "number" } }, { additionalProperties: false }), { a: "1", b: 2 });
add("coerce/tuple-items-falsy-entries", obj({ t: { type: "array", items: [false, { type: "integer" }, null, { type: "integer" }] } }), { t: ["1", "2", "3", "4"] });
add("coerce/items-then-validation-with-bounds", obj({ t: { type: "array", items: { type: "number", maximum: 5 } } }), { t: ["1", "9"] });
add("coerce/oneOf-objects-first-valid", obj({ v: { oneOf: [obj({ a: { type: "number" } }, { required: ["a"] }), obj({ b: { type: "number" } }, { required: ["b"] })] } }), { v: { a: "1" } });
add("coerce/deep-nesting", obj({ a: obj({ b: obj({ c: { type: "array", items: obj({ d: { type: "boolean" } }) } }) }) }), { a: { b: { c: [{ d: "true" }, { d: "false" }] } } });

for (const [format, values] of Object.entries(formatCases)) {
	values.forEach((value, index) => add(`format/${format}/${index}`, obj({ v: { type: "string", format } }), { v: value }));
}
add("format/on-number-ignored", obj({ v: { format: "email" } }), { v: 5 });

// arrays
add("array/min-items", obj({ v: { type: "array", minItems: 2 } }), { v: [1] });
add("array/max-items", obj({ v: { type: "array", maxItems: 1 } }), { v: [1, 2] });
add("array/unique-items", obj({ v: { type: "array", uniqueItems: true } }), { v: [1, 2, 1] });
add("array/unique-items-objects-key-order", obj({ v: { type: "array", uniqueItems: true } }), {
	v: [{ a: 1, b: 2 }, { b: 2, a: 1 }],
});
add("array/unique-items-ok", obj({ v: { type: "array", uniqueItems: true } }), { v: [1, "1", [1], { a: 1 }, null, true] });
add("array/unique-false", obj({ v: { type: "array", uniqueItems: false } }), { v: [1, 1] });
add("array/items-paths", obj({ v: { type: "array", items: { type: "integer" } } }), { v: [1, "x", 3, 4.5] });
add(
	"array/items-objects",
	obj({ rows: { type: "array", items: obj({ id: { type: "integer" }, tags: { type: "array", items: { type: "string" } } }, { required: ["id"] }) } }),
	{ rows: [{ id: 1, tags: ["a", 2] }, { tags: [] }, "x"] },
);
add("array/tuple-items", obj({ v: { type: "array", items: [{ type: "string" }, { type: "number" }] } }), { v: [1, "x", true] });
add("array/prefix-items", obj({ v: { type: "array", prefixItems: [{ type: "string" }], items: { type: "number" } } }), {
	v: [1, "x", 2],
});
add("array/contains", obj({ v: { type: "array", contains: { type: "string" } } }), { v: [1, 2] });
add("array/all-keywords", obj({ v: { type: "array", minItems: 5, maxItems: 1, uniqueItems: true, items: { type: "string" } } }), {
	v: [1, 1],
});
add("array/keywords-on-object-ignored", obj({ v: { minItems: 3 } }), { v: { a: 1 } });

// objects
add("object/additional-false", obj({ a: { type: "string" } }, { additionalProperties: false }), { a: "x", b: 1, c: 2 });
add("object/additional-false-ok", obj({ a: { type: "string" } }, { additionalProperties: false }), { a: "x" });
add("object/additional-schema", obj({ a: { type: "string" } }, { additionalProperties: { type: "number" } }), {
	a: "x",
	b: 1,
	c: "y",
});
add("object/additional-nested", obj({ inner: obj({ a: {} }, { additionalProperties: false }) }), { inner: { a: 1, zz: 2 } });
add(
	"object/additional-with-pattern-properties",
	{ type: "object", properties: { a: {} }, patternProperties: { "^x-": { type: "string" } }, additionalProperties: false },
	{ a: 1, "x-y": 2, other: 3 },
);
add("object/pattern-properties", { type: "object", patternProperties: { "^n_": { type: "number" } } }, { n_a: "x", s: "y" });
add("object/min-properties", { type: "object", minProperties: 2 }, { a: 1 });
add("object/max-properties", { type: "object", maxProperties: 1 }, { a: 1, b: 2 });
add("object/property-names", { type: "object", propertyNames: { pattern: "^[a-z]+$" } }, { ok: 1, Bad: 2, "9": 3 });
add("object/dependent-required", { type: "object", dependentRequired: { a: ["b", "c"] } }, { a: 1, c: 2 });
add("object/key-with-slash-and-tilde", obj({ "a/b": { type: "string" }, "c~d": { type: "string" }, "e.f": { type: "string" } }), {
	"a/b": 1,
	"c~d": 2,
	"e.f": 3,
});
add("object/required-key-with-slash", obj({}, { required: ["a/b"] }), {});
add("object/empty-key", obj({ "": { type: "string" } }), { "": 1 });
add(
	"object/deep-path",
	obj({ a: obj({ b: { type: "array", items: obj({ c: obj({ d: { type: "boolean" } }) }) } }) }),
	{ a: { b: [{ c: { d: true } }, { c: { d: "no" } }] } },
);
add("object/all-keywords", { type: "object", required: ["z"], properties: { a: { type: "string" } }, additionalProperties: false, minProperties: 5, maxProperties: 1 }, {
	a: 1,
	b: 2,
});

addRaw("object/key-order-numeric-keys-first", '{"type":"object","propertyNames":{"maxLength":1}}', '{"ok":1,"Bad":2,"9":3,"10":4,"01":5,"4294967294":6,"4294967295":7}');
addRaw("object/schema-properties-numeric-first", '{"type":"object","properties":{"b":{"type":"integer"},"1":{"type":"integer"}}}', '{"b":"x","1":"y"}');
addRaw("object/additional-false-numeric-keys", '{"type":"object","properties":{"a":{}},"additionalProperties":false}', '{"z":1,"a":2,"3":3,"1":4}');
addRaw("values/received-arguments-js-key-order", '{"type":"object","required":["zz"]}', '{"b":1,"10":2,"2":3,"a":{"1":1,"0":0},"-1":4}');
addRaw("values/received-arguments-number-spelling", '{"type":"object","required":["zz"]}', '{"a":1.0,"b":-0,"c":1E2,"d":0.000001,"e":1e-7,"f":12345678901234567890,"g":-0.0}');
addRaw("array/unique-items-zero-and-negative-zero", '{"type":"object","properties":{"v":{"uniqueItems":true}}}', '{"v":[0,-0]}');
addRaw("array/unique-items-one-and-one-point-zero", '{"type":"object","properties":{"v":{"uniqueItems":true}}}', '{"v":[1,1.0]}');
addRaw("enum/one-point-zero", '{"type":"object","properties":{"v":{"enum":[1]},"w":{"const":2.0}}}', '{"v":1.0,"w":2}');
add("object/non-coercible-key-paths", obj({ "a/b": { type: "string" }, "c~d": { type: "string" }, "e.f": { type: "string" }, "": { type: "string" } }), {
	"a/b": [],
	"c~d": [],
	"e.f": [],
	"": [],
});
add("object/dependencies-array", { type: "object", dependencies: { a: ["b"], c: ["d", "e"] } }, { a: 1, c: 2, d: 3 });
add("object/dependencies-schema", { type: "object", dependencies: { a: { required: ["b"], properties: { a: { type: "string" } } } } }, { a: [] });
add("object/dependent-schemas", { type: "object", dependentSchemas: { a: { required: ["b"] } } }, { a: 1 });
add("object/property-names-max-length", { type: "object", propertyNames: { maxLength: 2 } }, { abc: 1, ab: 2 });
add("object/pattern-properties-regex", { type: "object", patternProperties: { "^[0-9]+$": { type: "integer" }, "^x\\.": { type: "boolean" } } }, { "12": [], "x.y": [], "xzy": [] });
add("object/properties-regex-chars-not-patterns", obj({ "a.b": {} }, { additionalProperties: false }), { "a.b": 1, axb: 2 });
add("array/contains-min-max", obj({ v: { type: "array", contains: { type: "string" }, minContains: 2, maxContains: 3 } }), { v: ["a", 1] });
add("array/contains-max", obj({ v: { type: "array", contains: { type: "string" }, maxContains: 1 } }), { v: ["a", "b"] });
add("array/contains-min-zero", obj({ v: { type: "array", contains: { type: "string" }, minContains: 0 } }), { v: [1] });
add("array/additional-items", obj({ v: { type: "array", items: [{ type: "string" }], additionalItems: { type: "integer" } } }), { v: ["a", 1, [], {}] });
add("array/additional-items-false", obj({ v: { type: "array", items: [{}], additionalItems: false } }), { v: [1, 2, 3] });
add("if/no-then-else", obj({ v: { if: { type: "string" } } }), { v: 1 });
add("if/then-ok", obj({ v: { if: { type: "string" }, then: { minLength: 1 } } }), { v: "a" });
add("not/nested", obj({ v: { not: { not: { type: "string" } } } }), { v: [] });
add("anyOf/nested-anyOf", obj({ v: { anyOf: [{ anyOf: [{ type: "string" }, { type: "integer" }] }, { type: "object", required: ["k"] }] } }), { v: { j: [] } });
add("oneOf/objects-none", obj({ v: { oneOf: [obj({ a: { type: "string" } }, { required: ["a"] }), obj({ b: { type: "string" } }, { required: ["b"] })] } }), { v: {} });
add("allOf/with-refs", { type: "object", allOf: [{ $ref: "#/$defs/A" }, { $ref: "#/$defs/B" }], $defs: { A: { required: ["a"] }, B: { required: ["b"] } } }, {});

// Several errors at once: the order, and TypeBox's cap of 8 errors.
add(
	"order/mixed",
	obj(
		{ s: { type: "string", minLength: 2 }, n: { type: "number", maximum: 1 }, e: { enum: ["x"] }, arr: { type: "array", items: { type: "string" } } },
		{ required: ["s", "n", "missing"], additionalProperties: false },
	),
	{ s: 1, n: 2, e: "y", arr: [1, "ok", 2], extra: true },
);
add(
	"order/property-order-is-schema-order",
	obj({ b: { type: "string" }, a: { type: "string" } }),
	{ a: 1, b: 2 },
);
add(
	"order/cap-at-eight",
	obj(Object.fromEntries("abcdefghij".split("").map((k) => [k, { type: "integer" }]))),
	Object.fromEntries("abcdefghij".split("").map((k) => [k, "x"])),
);
add(
	"order/cap-counts-nested",
	obj({ list: { type: "array", items: { type: "integer" } }, z: { type: "integer" } }),
	{ list: ["a", "b", "c", "d", "e", "f", "g", "h", "i"], z: "x" },
);
add(
	"order/cap-inside-anyOf",
	obj({ v: { anyOf: [obj(Object.fromEntries("abcdefghij".split("").map((k) => [k, { type: "integer" }]))), { type: "string" }] } }),
	{ v: Object.fromEntries("abcdefghij".split("").map((k) => [k, "x"])) },
);
add(
	"order/mixed-non-coercible",
	obj(
		{ s: { type: "string", minLength: 2 }, n: { type: "number", maximum: 1 }, arr: { type: "array", items: { type: "integer" } } },
		{ required: ["s", "missing"], additionalProperties: false },
	),
	{ s: [], n: 2, arr: ["x", 1, "y"], extra: true },
);
add(
	"order/type-then-keywords",
	obj({ v: { type: "integer", minimum: 10, multipleOf: 4, enum: [12], const: 12 } }),
	{ v: 3.5 },
);
add("order/received-arguments-keep-key-order", obj({ z: { type: "string" } }, { required: ["z"] }), { y: 1, x: [2, { b: 1, a: 2 }], w: null });

// anyOf / oneOf / allOf / not / if
add("anyOf/no-branch", obj({ v: { anyOf: [{ type: "string" }, { type: "number", minimum: 5 }] } }), { v: 3 });
add("anyOf/no-branch-objects", obj({ v: { anyOf: [obj({ a: { type: "string" } }, { required: ["a"] }), obj({ b: { type: "number" } }, { required: ["b"] })] } }), {
	v: { c: 1 },
});
add("anyOf/ok", obj({ v: { anyOf: [{ type: "string" }, { type: "number" }] } }), { v: "x" });
add("oneOf/none", obj({ v: { oneOf: [{ type: "string" }, { type: "boolean" }] } }), { v: [] });
add("oneOf/two-match", obj({ v: { oneOf: [{ type: "number" }, { type: "integer" }] } }), { v: 3 });
add("oneOf/one-matches", obj({ v: { oneOf: [{ type: "number" }, { type: "string" }] } }), { v: 3 });
add("allOf/two-fail", obj({ v: { allOf: [{ type: "string" }, { minLength: 3 }, { pattern: "^a" }] } }), { v: "b" });
add("allOf/ok", obj({ v: { allOf: [{ type: "string" }, { minLength: 1 }] } }), { v: "a" });
add("not/fails", obj({ v: { not: { type: "string" } } }), { v: "x" });
add("if/then-fails", obj({ v: { if: { type: "string" }, then: { minLength: 3 }, else: { type: "number" } } }), { v: "ab" });
add("if/else-fails", obj({ v: { if: { type: "string" }, then: { minLength: 3 }, else: { type: "number" } } }), { v: true });
add("boolean-schema/false-property", obj({ v: false }), { v: 1 });
add("boolean-schema/true-property", obj({ v: true }), { v: 1 });
add("root/empty-schema", {}, { anything: [1] });
add("root/true-schema", true, { a: 1 });

// Coercion (plain JSON schemas get AJV-compatible coercion)
add("coerce/string-to-number", obj({ v: { type: "number" } }), { v: "42.5" });
add("coerce/string-to-integer", obj({ v: { type: "integer" } }), { v: "42" });
add("coerce/string-float-to-integer-fails", obj({ v: { type: "integer" } }), { v: "42.1" });
add("coerce/string-whole-float-to-integer", obj({ v: { type: "integer" } }), { v: "42.0" });
add("coerce/string-padded-number", obj({ v: { type: "number" } }), { v: "  7 " });
add("coerce/string-hex-number", obj({ v: { type: "number" } }), { v: "0x10" });
add("coerce/string-exponent-number", obj({ v: { type: "number" } }), { v: "1e3" });
add("coerce/string-infinity-fails", obj({ v: { type: "number" } }), { v: "Infinity" });
add("coerce/string-empty-number-fails", obj({ v: { type: "number" } }), { v: "  " });
add("coerce/string-word-number-fails", obj({ v: { type: "number" } }), { v: "abc" });
add("coerce/string-leading-dot", obj({ v: { type: "number" } }), { v: ".5" });
add("coerce/string-plus-sign", obj({ v: { type: "number" } }), { v: "+3" });
add("coerce/string-binary-octal", obj({ a: { type: "number" }, b: { type: "number" } }), { a: "0b101", b: "0o17" });
add("coerce/string-large-integer", obj({ v: { type: "integer" } }), { v: "12345678901234567890" });
add("coerce/null-to-number", obj({ v: { type: "number" } }), { v: null });
add("coerce/null-to-integer", obj({ v: { type: "integer" } }), { v: null });
add("coerce/bool-to-number", obj({ a: { type: "number" }, b: { type: "integer" } }), { a: true, b: false });
add("coerce/true-string-to-boolean", obj({ a: { type: "boolean" }, b: { type: "boolean" } }), { a: "true", b: "false" });
add("coerce/one-zero-to-boolean", obj({ a: { type: "boolean" }, b: { type: "boolean" } }), { a: 1, b: 0 });
add("coerce/two-to-boolean-fails", obj({ a: { type: "boolean" } }), { a: 2 });
add("coerce/string-one-to-boolean-fails", obj({ a: { type: "boolean" } }), { a: "1" });
add("coerce/uppercase-true-fails", obj({ a: { type: "boolean" } }), { a: "TRUE" });
add("coerce/null-to-boolean", obj({ a: { type: "boolean" } }), { a: null });
add("coerce/null-to-string", obj({ a: { type: "string" } }), { a: null });
add("coerce/number-to-string", obj({ a: { type: "string" }, b: { type: "string" }, c: { type: "string" }, d: { type: "string" } }), {
	a: 42,
	b: 1.5,
	c: 1e21,
	d: 1e-7,
});
add("coerce/number-to-string-big", obj({ a: { type: "string" }, b: { type: "string" } }), { a: 123456789012345680000, b: 0.000001 });
add("coerce/bool-to-string", obj({ a: { type: "string" } }), { a: false });
add("coerce/to-null", obj({ a: { type: "null" }, b: { type: "null" }, c: { type: "null" } }), { a: "", b: 0, c: false });
add("coerce/string-null-to-null-fails", obj({ a: { type: "null" } }), { a: "null" });
add("coerce/object-to-string-fails", obj({ a: { type: "string" } }), { a: { x: 1 } });
add("coerce/json-string-to-array-fails", obj({ a: { type: "array" } }), { a: "[1,2]" });
add("coerce/json-string-to-object-fails", obj({ a: { type: "object" } }), { a: '{"x":1}' });
add("coerce/then-bounds-checked", obj({ a: { type: "number", minimum: 10 } }), { a: "5" });
add("coerce/union-null-kept", obj({ v: { type: ["integer", "null"] } }), { v: null });
add("coerce/union-string-to-integer", obj({ v: { type: ["integer", "null"] } }), { v: "7" });
add("coerce/union-empty-string-to-null", obj({ v: { type: ["integer", "null"] } }), { v: "" });
add("coerce/union-first-change-wins", obj({ v: { type: ["string", "number"] } }), { v: true });
add("coerce/union-number-boolean", obj({ v: { type: ["number", "boolean"] } }), { v: "true" });
add("coerce/union-already-member", obj({ v: { type: ["string", "number"] } }), { v: 5 });
add("coerce/anyOf-first-branch-that-validates", obj({ v: { anyOf: [{ type: "boolean" }, { type: "integer" }] } }), { v: "3" });
add("coerce/anyOf-string-first-takes-number", obj({ v: { anyOf: [{ type: "string" }, { type: "number" }] } }), { v: 5 });
add("coerce/anyOf-number-first", obj({ v: { anyOf: [{ type: "number" }, { type: "string" }] } }), { v: "5" });
add("coerce/anyOf-none-validates", obj({ v: { anyOf: [{ type: "integer", minimum: 10 }, { type: "boolean" }] } }), { v: "3" });
add("coerce/anyOf-objects", obj({ v: { anyOf: [obj({ k: { const: "a" }, n: { type: "number" } }, { required: ["k"] }), obj({ k: { const: "b" }, s: { type: "string" } }, { required: ["k"] })] } }), {
	v: { k: "b", s: 5 },
});
add("coerce/oneOf-branch", obj({ v: { oneOf: [{ type: "null" }, { type: "number" }] } }), { v: "8" });
add("coerce/oneOf-both-coerce", obj({ v: { oneOf: [{ type: "integer" }, { type: "number" }] } }), { v: "8" });
add("coerce/allOf-sequence", obj({ v: { allOf: [{ type: "number" }, { minimum: 1 }] } }), { v: "4" });
add("coerce/allOf-objects", { allOf: [obj({ a: { type: "number" } }), obj({ b: { type: "boolean" } })] }, { a: "1", b: "true" });
add("coerce/nested-object", obj({ o: obj({ n: { type: "number" }, b: { type: "boolean" } }) }), { o: { n: "3", b: "false" } });
add("coerce/array-items", obj({ list: { type: "array", items: { type: "integer" } } }), { list: ["1", 2, "3"] });
add("coerce/tuple-items", obj({ t: { type: "array", items: [{ type: "integer" }, { type: "boolean" }] } }), { t: ["1", "true", "x"] });
add("coerce/array-of-objects", obj({ rows: { type: "array", items: obj({ n: { type: "number" } }) } }), { rows: [{ n: "1" }, { n: "x" }] });
add("coerce/additional-properties-schema", obj({ a: { type: "string" } }, { additionalProperties: { type: "number" } }), { a: 1, b: "2", c: "x" });
add("coerce/no-object-type-no-property-coercion", { properties: { n: { type: "number" } } }, { n: "5" });
add("coerce/no-array-type-no-item-coercion", obj({ list: { items: { type: "number" } } }), { list: ["5"] });
add("coerce/union-type-with-object", { type: ["object", "null"], properties: { n: { type: "number" } } }, { n: "5" });
add("coerce/prefix-items-not-coerced", obj({ t: { type: "array", prefixItems: [{ type: "integer" }] } }), { t: ["1"] });
add("coerce/enum-not-coerced", obj({ v: { enum: [1, 2] } }), { v: "1" });
add("coerce/const-not-coerced", obj({ v: { const: true } }), { v: "true" });
add("coerce/ref-property-not-coerced", { type: "object", properties: { p: { $ref: "#/$defs/N" } }, $defs: { N: { type: "number" } } }, { p: "5" });
add("coerce/pattern-properties-not-coerced", { type: "object", patternProperties: { "^n": { type: "number" } } }, { n1: "5" });
add("coerce/after-coercion-other-errors-reported", obj({ a: { type: "number" }, b: { type: "string", minLength: 3 } }), { a: "1", b: 5 });
add("coerce/error-shows-original-arguments", obj({ a: { type: "number" }, b: { type: "boolean" } }, { required: ["c"] }), { a: "1", b: "true" });
add("coerce/top-level-primitive-valid", { type: "number" }, "42");
add("coerce/top-level-primitive-invalid-is-returned", { type: "number", minimum: 100 }, "42");
add("coerce/top-level-null-to-string", { type: "string" }, null);
add("coerce/top-level-unchanged-invalid", { type: "number" }, "abc");
add("coerce/missing-optional-property-untouched", obj({ a: { type: "number" }, b: { type: "number" } }), { a: "1" });
for (const [index, text] of ["1_000", "0x1F", "-0x10", " 0x10 ", "1e", "1.", "\u00a05\u2028", "-Infinity", "1e400", "1e-400", "0b", "00012", "-.5e1", "5e+2", "\ufeff3"].entries()) {
	add(`coerce/js-number-syntax/${index}`, obj({ v: { type: "number" } }), { v: text });
}
add("coerce/integer-from-exponent", obj({ v: { type: "integer" } }), { v: "1e21" });
add("coerce/bool-string-in-integer-union", obj({ v: { type: ["integer", "boolean"] } }), { v: "false" });
add("coerce/null-type-union-order", obj({ v: { type: ["null", "string"] } }), { v: 0 });
add("coerce/anyOf-then-oneOf", obj({ v: { anyOf: [{ type: "integer" }], oneOf: [{ type: "string" }] } }), { v: "5" });
add("coerce/allOf-then-type", obj({ v: { allOf: [{ type: "string" }], type: "number" } }), { v: 5 });
add("coerce/anyOf-boolean-true-branch", obj({ v: { anyOf: [true, { type: "number" }] } }), { v: "5" });
add("coerce/top-level-anyOf-object", { anyOf: [obj({ n: { type: "number" } }, { required: ["n"] })] }, { n: "1", extra: 2 });
add("coerce/negative-zero-string", obj({ a: { type: "number" } }), { a: "-0" });

// $ref / $defs
const person = {
	type: "object",
	properties: { name: { type: "string" }, age: { type: "integer", minimum: 0 } },
	required: ["name"],
};
add("ref/defs-ok", { type: "object", properties: { p: { $ref: "#/$defs/Person" } }, required: ["p"], $defs: { Person: person } }, {
	p: { name: "Ann", age: 3 },
});
add("ref/defs-nested-errors", { type: "object", properties: { p: { $ref: "#/$defs/Person" } }, required: ["p"], $defs: { Person: person } }, {
	p: { age: -1 },
});
add("ref/definitions", { type: "object", properties: { p: { $ref: "#/definitions/Person" } }, definitions: { Person: person } }, {
	p: { name: 1 },
});
add("ref/array-of-refs", { type: "object", properties: { people: { type: "array", items: { $ref: "#/$defs/Person" } } }, $defs: { Person: person } }, {
	people: [{ name: "a" }, { age: 2 }],
});
add("ref/anyOf-ref-branches", { type: "object", properties: { v: { anyOf: [{ $ref: "#/$defs/Person" }, { type: "null" }] } }, $defs: { Person: person } }, {
	v: { name: "x" },
});
add("ref/anyOf-ref-branches-invalid", { type: "object", properties: { v: { anyOf: [{ $ref: "#/$defs/Person" }, { type: "null" }] } }, $defs: { Person: person } }, {
	v: { name: 5 },
});
add("ref/anyOf-ref-branch-coercion", { type: "object", properties: { v: { anyOf: [{ $ref: "#/$defs/N" }, { type: "boolean" }] } }, $defs: { N: { type: "number" } } }, {
	v: "5",
});
add("ref/anyOf-ref-branch-null", { type: "object", properties: { v: { anyOf: [{ $ref: "#/$defs/P" }, { type: "null" }] } }, $defs: { P: person } }, { v: null });
add("ref/optional-pydantic-style", {
	type: "object",
	properties: { inner: { anyOf: [{ $ref: "#/$defs/Inner" }, { type: "null" }], default: null } },
	$defs: { Inner: { type: "object", properties: { x: { type: "integer" } }, required: ["x"], title: "Inner" } },
}, { inner: { x: "2" } });
add("ref/root-recursive-tree", {
	type: "object",
	properties: { value: { type: "number" }, children: { type: "array", items: { $ref: "#" } } },
	required: ["value"],
}, { value: 1, children: [{ value: 2, children: [{ value: "x" }] }, { children: [] }] });
add("ref/recursive-defs", {
	type: "object",
	properties: { root: { $ref: "#/$defs/Node" } },
	$defs: { Node: { type: "object", properties: { next: { anyOf: [{ $ref: "#/$defs/Node" }, { type: "null" }] }, v: { type: "integer" } }, required: ["v"] } },
}, { root: { v: 1, next: { v: 2, next: { v: "3", next: null } } } });
add("ref/pointer-escapes", { type: "object", properties: { a: { $ref: "#/$defs/a~1b" }, b: { $ref: "#/$defs/c~0d" }, c: { $ref: "#/$defs/sp%20ace" } }, $defs: { "a/b": { type: "string" }, "c~d": { type: "number" }, "sp ace": { type: "boolean" } } }, {
	a: 1,
	b: "x",
	c: 2,
});
add("ref/unresolvable", { type: "object", properties: { a: { $ref: "#/$defs/Missing" } } }, { a: 1 });
add("ref/unresolvable-absent-property", { type: "object", properties: { a: { $ref: "#/$defs/Missing" } } }, {});
add("ref/remote-unresolvable", { type: "object", properties: { a: { $ref: "https://example.com/schema.json" } } }, { a: 1 });
add("ref/with-siblings", { type: "object", properties: { a: { $ref: "#/$defs/S", maxLength: 2 } }, $defs: { S: { type: "string", minLength: 1 } } }, { a: "abc" });
add("ref/anchor", { type: "object", properties: { a: { $ref: "#num" } }, $defs: { N: { $anchor: "num", type: "number" } } }, { a: "x" });
add("ref/into-properties", { type: "object", properties: { a: { type: "string" }, b: { $ref: "#/properties/a" } } }, { a: "x", b: 2 });
add("ref/root-id-local-pointer", { $id: "https://example.com/tool", type: "object", properties: { a: { $ref: "#/$defs/A" } }, $defs: { A: { type: "string" } } }, { a: 1 });
add("ref/root-id-absolute", { $id: "https://example.com/tool", type: "object", properties: { a: { $ref: "https://example.com/tool#/$defs/A" } }, $defs: { A: { type: "string" } } }, { a: [] });
add("ref/to-root-in-anyOf", { type: "object", properties: { v: { type: "integer" }, next: { anyOf: [{ $ref: "#" }, { type: "null" }] } } }, { v: 1, next: { v: [], next: null } });
add("ref/target-not-a-schema", { type: "object", properties: { a: { $ref: "#/$defs/N" } }, $defs: { N: 5 } }, { a: 1 });
add("ref/self-loop", { $ref: "#" }, { a: 1 });
add("ref/mutual-loop", { type: "object", properties: { a: { $ref: "#/$defs/X" } }, $defs: { X: { $ref: "#/$defs/Y" }, Y: { $ref: "#/$defs/X" } } }, { a: 1 });
add("ref/mutual-loop-absent", { type: "object", properties: { a: { $ref: "#/$defs/X" } }, $defs: { X: { $ref: "#/$defs/Y" }, Y: { $ref: "#/$defs/X" } } }, {});

// Schemas that are not valid JSON Schema
add("bad-schema/invalid-pattern", obj({ v: { type: "string", pattern: "(" } }), { v: "x" });
add("bad-schema/property-schema-null", { type: "object", properties: { a: null } }, { a: 1 });
add("bad-schema/required-not-array", { type: "object", properties: { a: {} }, required: "a" }, {});
add("bad-schema/minimum-string", obj({ v: { type: "number", minimum: "5" } }), { v: 1 });
add("bad-schema/anyOf-not-array", obj({ v: { anyOf: { type: "string" } } }), { v: 1 });
add("bad-schema/allOf-null", obj({ v: { allOf: [null] } }), { v: 1 });
add("bad-schema/anyOf-null", obj({ v: { anyOf: [null, { type: "string" }] } }), { v: 1 });
add("bad-schema/property-null-absent", { type: "object", properties: { a: null, b: { type: "integer" } } }, { b: "x" });
add("bad-schema/invalid-pattern-unreferenced-defs", { type: "object", properties: { a: { type: "string" } }, $defs: { X: { pattern: "(" } } }, { a: "x" });
add("bad-schema/invalid-pattern-properties", { type: "object", patternProperties: { "(": {} } }, { a: 1 });
add("bad-schema/root-array", [], { a: 1 });
add("bad-schema/items-null", obj({ v: { type: "array", items: null } }), { v: [1] });

// Values a model might send
add("values/unicode-and-escapes", obj({ s: { type: "number" } }, { required: ["s"] }), {
	s: "é\"\\\n\t\u0001\u001f\u007f\u2028😀</script>",
});
add("values/numbers-in-received-arguments", obj({ z: {} }, { required: ["z"] }), { a: 1e21, b: 1.5e-7, c: 0.1, d: -2, e: 123456789012345680000, f: 1e300, g: 5e-324 });
add("values/empty-containers", obj({ z: {} }, { required: ["z"] }), { a: {}, b: [], c: [[]], d: [{}] });
add("values/empty-arguments-pretty", obj({ z: {} }, { required: ["z"] }), {});
add("values/tool-name-in-message", obj({ z: {} }, { required: ["z"] }), {}, 'weird "name"');

// ---------------------------------------------------------------------------------------------
// Run
// ---------------------------------------------------------------------------------------------

const names = new Set();
const recorded = cases.map((entry) => {
	if (names.has(entry.name)) fail(`duplicate case name ${entry.name}`);
	names.add(entry.name);
	const schema = "schemaJson" in entry ? JSON.parse(entry.schemaJson) : JSON.parse(JSON.stringify(entry.schema));
	const argumentsValue = "argumentsJson" in entry ? JSON.parse(entry.argumentsJson) : JSON.parse(JSON.stringify(entry.arguments));
	const out = { name: entry.name, tool: entry.tool, schema, arguments: argumentsValue };
	if ("schemaJson" in entry) out.schemaJson = entry.schemaJson;
	if ("argumentsJson" in entry) out.argumentsJson = entry.argumentsJson;
	try {
		const result = validateToolArguments(
			{ name: entry.tool, description: "", parameters: schema },
			// structuredClone keeps what JSON.parse produced (-0 included) for pi to see.
			{ type: "toolCall", id: "call_1", name: entry.tool, arguments: structuredClone(argumentsValue) },
		);
		out.ok = result;
	} catch (error) {
		const message = error instanceof Error ? error.message : String(error);
		if (message.startsWith(`Validation failed for tool "${entry.tool}":\n`)) out.error = message;
		else out.thrown = message;
	}
	return out;
});

const fixture = {
	_generated: `by scripts/pi-fixtures/record-validation.mjs from ${PACKAGE}@${VERSION} (typebox ${typebox}); do not edit`,
	cases: recorded,
};
const text = `${JSON.stringify(fixture, null, "\t")}\n`;
if (check) {
	const current = existsSync(outFile) ? readFileSync(outFile, "utf8") : "";
	if (current !== text) fail(`${outFile} is out of date; rerun without --check`);
	console.log(`${outFile} is up to date (${recorded.length} cases)`);
} else {
	mkdirSync(dirname(outFile), { recursive: true });
	writeFileSync(outFile, text);
	const counts = { ok: 0, error: 0, thrown: 0 };
	for (const c of recorded) counts["ok" in c ? "ok" : "error" in c ? "error" : "thrown"]++;
	console.log(`wrote ${outFile}: ${recorded.length} cases (${counts.ok} ok, ${counts.error} errors, ${counts.thrown} thrown)`);
}
