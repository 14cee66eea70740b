"""The MCP layer: tool names, descriptions, schemas and results, the transports
(stdio, HTTP with its guard) and the `vaultwatch-server` command that starts them.

Named `protocol`, not `mcp`: `server.mcp` would read as (and in a bare `import mcp` from a
script run inside this folder, shadow) the `mcp` SDK package this layer is built on."""
