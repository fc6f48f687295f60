// golden.mjs writes golden.json: a corpus of realistic texts with their o200k_base token counts as computed by
// js-tiktoken, OpenAI's tiktoken ported to JavaScript (standard backtracking regular expressions, the reference the
// shipped Tokenizer must match). The corpus is generated from a fixed seed, so a rerun gives the same file.
//
// Regenerate (npm reaches the registry; nothing else is downloaded):
//
//	dir=$(mktemp -d) && (cd "$dir" && npm install js-tiktoken >/dev/null && \
//	  node /path/to/services/composer/internal/o200k/testdata/golden.mjs) > golden.json
//
// js-tiktoken is resolved from the current directory, so run it where it is installed.
import { createRequire } from "node:module";

const require = createRequire(process.cwd() + "/");
const { getEncoding } = require("js-tiktoken");
const enc = getEncoding("o200k_base");

// mulberry32: a small seeded PRNG, so the corpus is reproducible.
let seed = 0x5eed2026;
function rnd() {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (xs) => xs[Math.floor(rnd() * xs.length)];
const int = (lo, hi) => lo + Math.floor(rnd() * (hi - lo + 1));
const hex = (n) => Array.from({ length: n }, () => "0123456789abcdef"[int(0, 15)]).join("");
const uuid = () => `${hex(8)}-${hex(4)}-4${hex(3)}-${pick(["8", "9", "a", "b"])}${hex(3)}-${hex(12)}`;

const systems = ["Sol", "Alpha Centauri", "Barnard's Star", "Wolf 359", "Tau Ceti", "Epsilon Eridani", "Kepler-442"];
const items = ["iron_ore", "copper_ore", "titanium_ore", "ice", "helium_3", "fuel_cell", "hull_plating", "nav_chip"];
const poiTypes = ["asteroid_belt", "station", "planet", "gas_giant", "jump_gate", "derelict"];
const names = ["Scout", "Miner-7", "Trader Joe", "Ünïcödé", "船长", "Пилот", "Ǆemal", "ace_pilot_99"];

function toolResult() {
  const kind = int(0, 5);
  if (kind === 0) {
    return JSON.stringify({
      player: { id: uuid(), username: pick(names), credits: int(0, 2_000_000), empire: pick(["solarian", "voidborn", "nebula"]) },
      ship: { class: pick(["prospector", "hauler", "corvette"]), hull: int(1, 500), max_hull: 500, fuel: int(0, 100),
        cargo_used: int(0, 60), cargo_capacity: 60 },
      location: { system: pick(systems), poi: pick(poiTypes) + "_" + int(1, 9), docked: rnd() < 0.5 },
    }, null, pick([0, 2]));
  }
  if (kind === 1) {
    const pois = Array.from({ length: int(1, 8) }, (_, i) => ({ id: `poi_${i}`, type: pick(poiTypes),
      name: `${pick(systems)} ${pick(["Prime", "II", "Belt", "Station", "Gate"])}`, distance: Math.round(rnd() * 10000) / 100,
      resources: Array.from({ length: int(0, 3) }, () => pick(items)) }));
    return JSON.stringify({ system: pick(systems), security: pick(["high", "low", "null"]), pois });
  }
  if (kind === 2) {
    const orders = Array.from({ length: int(1, 12) }, () => `${pick(items)}\t${int(1, 999)}\t${(rnd() * 500).toFixed(2)} cr`);
    return `Market at ${pick(systems)} (tick ${int(1000, 99999)}):\n` + orders.join("\n");
  }
  if (kind === 3) {
    return JSON.stringify({ error: { code: pick(["rate_limited", "not_docked", "insufficient_fuel", "session_invalid"]),
      message: pick(["You must wait for the next tick.", "Dock at a station first.", "Not enough fuel to travel 3 jumps."]),
      retry_after: int(1, 10) } });
  }
  if (kind === 4) {
    return `session_id: ${uuid()}\nWelcome back, ${pick(names)}! You have ${int(0, 40)} unread messages.\n` +
      `[TOOL_CALLS]mine:{"target":"${pick(items)}","amount":${int(1, 50)}}|`;
  }
  const rows = Array.from({ length: int(2, 6) }, () => `| ${pick(items).padEnd(14)} | ${String(int(0, 9999)).padStart(6)} |`);
  return "| item           |    qty |\n|----------------|--------|\n" + rows.join("\n");
}

const prose = [
  "The mission is simple: mine iron ore in the Sol belt, sell it at the station, and buy a better ship.",
  "I should check my fuel before jumping; the last trip to Wolf 359 nearly left me stranded.",
  "Commander's orders: regroup at Tau Ceti and wait for the convoy. Don't engage pirates unless attacked!",
  "Hmm... the market price dropped 12% since yesterday. Maybe it's better to hold the cargo for a few ticks?",
  "Status: docked. Cargo: 42/60. Credits: 15,230. Next step — refuel, then travel to the asteroid field.",
  "They're saying the jump gate is closed; we'll have to take the long route through Barnard's Star.",
  "ALL MYSES: report your positions NOW. This is not a drill.",
  "I've already searched my memory for 'iron_ore' and found three earlier sales at 120 cr each.",
];
const unicode = [
  "日本語のテキストと English が混ざった文章です。", "Привет, МИР! Как дела у пилотов?", "ΑΒΓ αβγ — Ελληνικά",
  "한국어 텍스트와 숫자 12345", "Ünïcödé Çafé naïve façade", "🚀 launch 🚀🚀 emoji👍🏽ok ✨", "e\u0301\u0302 combining marks",
  "\u0301 leading mark", "a\u00a0non-breaking\u3000space", "مرحبا بالعالم", "שלום עולם", "हिन्दी पाठ", "ǅemal ǈubljana ʰʲ",
  "Ⅻ roman ٣٤٥ digits", "\u2028line-sep \u2029para-sep", "tab\tseparated\tvalues\t✓",
];
// No U+0085 (NEXT LINE): JavaScript's \s leaves it out while the Rust/Python tiktoken's Unicode \s (and the Go
// scanner) count it as white space, so js-tiktoken disagrees with OpenAI's own tokenizer there (" \u0085next": 3
// tokens in js-tiktoken, 4 in tiktoken). o200k_test.go's samples cover it against the Go reference library.
const code = [
  "func (t *Tokenizer) Count(s string) int {\n\treturn t.count(s)\n}\n",
  "for i := range n {\n\tif err := step(i); err != nil {\n\t\treturn fmt.Errorf(\"step %d: %w\", i, err)\n\t}\n}",
  "SELECT id, seq, content FROM memories WHERE mysis_id = $1 AND seq > $2 ORDER BY seq LIMIT 200;",
  "def mine(ship, target='iron_ore', amount=10):\n    return ship.call('mine', target=target, amount=amount)\n",
  "const x = arr.map((v, i) => v * i).filter(Boolean); // don't forget the semicolon",
  "<tool_result id=\"call_01\">\n  <ok>true</ok>\n</tool_result>",
  "$ grpcurl -plaintext 127.0.0.1:7003 zoea.runner.v1.SwarmService/ListMyses",
  "```json\n{\"a\": [1, 2, 3], \"b\": null}\n```",
];

function numbers() {
  return pick([
    () => String(int(0, 1e9)), () => (rnd() * 1e6).toFixed(int(0, 6)), () => int(1, 999) + "," + String(int(0, 999)).padStart(3, "0"),
    () => `x${int(1, 9)}y${int(10, 99)}z${int(100, 999)}`, () => `${int(1, 12)}/${int(1, 28)}/20${int(10, 30)} ${int(0, 23)}:${int(10, 59)}`,
    () => "3.14159265358979323846", () => `-${int(1, 99)}.${int(0, 99)}e${int(-9, 9)}`, () => "0x" + hex(int(2, 16)),
  ])();
}
function whitespace() {
  const ws = [" ", "  ", "\t", "\n", "\r\n", "\n\n", " \n", "\n ", "\u00a0", "\u3000"];
  let s = "";
  for (let i = int(1, 8); i > 0; i--) s += rnd() < 0.6 ? pick(ws).repeat(int(1, 5)) : pick(["x", "word", "42", "!", "é", "日"]);
  return s;
}
function mixed() {
  return Array.from({ length: int(2, 5) }, () => pick([toolResult, () => pick(prose), () => pick(unicode), () => pick(code), numbers, whitespace])()).join(pick(["\n", " ", "\n\n", ""]));
}

const cases = [];
const gens = [[toolResult, 120], [() => pick(prose), 20], [() => pick(unicode), 30], [() => pick(code), 20], [numbers, 40], [whitespace, 60], [mixed, 80]];
const seen = new Set();
for (const [gen, n] of gens) {
  for (let i = 0; i < n; i++) {
    const text = gen();
    if (seen.has(text)) continue;
    seen.add(text);
    cases.push({ text, tokens: enc.encode(text).length });
  }
}
process.stdout.write(JSON.stringify({ encoding: "o200k_base", reference: "js-tiktoken", cases }, null, 1) + "\n");
