"""vaultwatch server: the vault and its MCP tools. Never imports app/ or textual."""

__version__ = "0.1.0"
