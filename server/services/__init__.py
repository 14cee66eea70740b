"""What the tools do, as plain functions over a Vault: list, search, recall, context,
reads, health, tags, writes. No MCP, no Textual."""
