// Plays SpaceMolt's starter loop on an MCP v2 endpoint with the official TypeScript MCP SDK client:
// register, undock, travel to the belt, mine, travel back, dock, sell. Usage: node play.mjs <url> <username>.
// Prints one JSON line {credits_before, credits_after, sold, tools}; exits 1 on any failure.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, username] = process.argv.slice(2);
const client = new Client({ name: "spacemolt-sim-tsclient", version: "1.0.0" });
await client.connect(new StreamableHTTPClientTransport(new URL(url)));

async function act(tool, action, args = {}) {
  const res = await client.callTool({ name: tool, arguments: { action, ...args } });
  if (res.isError) {
    throw new Error(`${tool}.${action}: ${res.content?.[0]?.text}`);
  }
  if (!res.structuredContent || typeof res.content?.[0]?.text !== "string") {
    throw new Error(`${tool}.${action}: want text and structuredContent, got ${JSON.stringify(res)}`);
  }
  return res.structuredContent;
}

try {
  const { tools } = await client.listTools();
  await act("spacemolt_auth", "register", { username, empire: "solarian" });
  const before = (await act("spacemolt", "get_status")).player.credits;
  await act("spacemolt", "undock");
  await act("spacemolt", "travel", { id: "main_belt" });
  for (let i = 0; i < 3; i++) await act("spacemolt", "mine");
  const cargo = await act("spacemolt", "get_cargo");
  await act("spacemolt", "travel", { id: "sol_central" });
  await act("spacemolt", "dock");
  let sold = 0;
  for (const item of cargo.cargo) {
    const s = await act("spacemolt", "sell", { id: item.item_id, quantity: item.quantity });
    sold += s.details.quantity_sold; // a v2 mutation answers a state delta, its own result under details
  }
  const after = (await act("spacemolt", "get_status")).player.credits;
  console.log(JSON.stringify({ credits_before: before, credits_after: after, sold, tools: tools.length }));
  await client.close();
} catch (err) {
  console.error(String(err));
  await client.close();
  process.exit(1);
}
