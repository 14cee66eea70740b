// A client we did not write: the official TypeScript SDK, v1 (legacy era) or v2 (auto era).
// usage: node ts_client.mjs v1|v2 stdio|http <command-or-url> [token] -- [server args...]
// Prints one JSON line per step; exits 0 when the script itself ran to the end.
const [sdk, transportKind, target, token] = process.argv.slice(2);
const serverArgs = process.argv.slice(process.argv.indexOf("--") + 1);
const out = (step, value) => console.log(JSON.stringify({ step, ...value }));

let Client, Stdio, Http;
if (sdk === "v1") {
  ({ Client } = await import("@modelcontextprotocol/sdk/client/index.js"));
  ({ StdioClientTransport: Stdio } = await import("@modelcontextprotocol/sdk/client/stdio.js"));
  ({ StreamableHTTPClientTransport: Http } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js"));
} else {
  ({ Client, StreamableHTTPClientTransport: Http } = await import("@modelcontextprotocol/client"));
  ({ StdioClientTransport: Stdio } = await import("@modelcontextprotocol/client/stdio"));
}
const transport = transportKind === "stdio"
  ? new Stdio({ command: target, args: serverArgs, stderr: "ignore" })
  : new Http(new URL(target), { requestInit: { headers: token ? { Authorization: `Bearer ${token}` } : {} } });
const client = sdk === "v1"
  ? new Client({ name: "ts-sdk-v1-probe", version: "1.0.0" })
  : new Client({ name: "ts-sdk-v2-probe", version: "2.0.0" }, { versionNegotiation: { mode: "auto" } });
await client.connect(transport);
out("connected", { server: client.getServerVersion() });
const { tools } = await client.listTools();
out("tools", { names: tools.map((t) => t.name), readOnly: tools.filter((t) => t.annotations?.readOnlyHint).map((t) => t.name) });
const call = async (name, args) => {
  const r = await client.callTool({ name, arguments: args });
  return { isError: !!r.isError, structured: r.structuredContent ?? null, text: r.content?.[0]?.text ?? "" };
};
const read = await call("read_doc", { path: "weeks/2026-W49.md", section: "Log" });
out("read", read);
out("append", await call("append_section", { path: "weeks/2026-W49.md", heading: "Log", content: `- from ${sdk} over ${transportKind}` }));
out("conflict", await call("replace_doc", { path: "weeks/2026-W49.md", content: "# stale\n", hash: read.structured?.hash ?? "x" }));
out("rejected", await call("create_doc", { path: "inbox/bad.md", body: "# Bad\n", tags: ["not-in-vocabulary"] }));
await client.close();
out("done", {});
