"""`VaultServer`: the MCP server of one vault, where errors the SDK raises before a tool runs
(unknown arguments, arguments that fail validation) are written for the model and every error
fits the result budget."""

import difflib
from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import Tool as MCPTool
from pydantic import ValidationError

from server.core.budget import cap_message, fit_text
from server.protocol.toolkit import client_name
from server.vault import Vault
from server.write import journal


class VaultServer(MCPServer):
    """The MCP server of one vault: every tool error the model receives fits the result
    budget, whoever raised it (our tools, or the SDK for an unknown tool or arguments that
    fail validation, which can list 100,000 bad items or echo a megabyte argument)."""

    def __init__(self, vault: Vault, **kwargs: Any) -> None:
        super().__init__("vaultwatch", **kwargs)
        self.vault = vault
        self._tools: dict[str, MCPTool] | None = None

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context | None = None
    ) -> Any:
        try:
            await self.refuse_unknown_arguments(name, arguments, context)
            try:
                return await super().call_tool(name, arguments, context)
            except ToolError as exc:
                if not isinstance(exc.__cause__, ValidationError):
                    raise
                # the SDK's text is pydantic's report on its argument model (with a link to
                # pydantic's docs); the model needs the argument, what was wrong, what to send
                said = await self.refuse(name, arguments, context, bad_arguments(exc.__cause__))
                raise said from exc.__cause__  # the SDK logs a validation error by field names
        except ToolError as exc:
            text = str(exc)
            limit = self.vault.config.limits.result_chars
            if len(text) <= limit:
                raise
            # cut in the middle: the start says what happened, the end what to do next
            short = type(exc)(cap_message(text, limit))
            raise short from exc.__cause__

    async def listed(self, name: str) -> MCPTool | None:
        if self._tools is None:  # the tools are all registered before the first call
            self._tools = {t.name: t for t in await self.list_tools()}
        return self._tools.get(name)

    async def refuse_unknown_arguments(
        self, name: str, arguments: dict[str, Any], context: Context | None
    ) -> None:
        """The SDK drops arguments a tool does not declare: create_doc called with `content`
        instead of `body` made an empty note, list_docs with `tag` listed every note. A name
        the tool does not have is refused, before anything runs, with the names it has."""
        tool = await self.listed(name)
        if tool is None:
            return  # the SDK says the tool is unknown
        known = list(tool.input_schema.get("properties", {}))
        unknown = [fit_text(k, 60) for k in arguments if k not in known]
        if not unknown:
            return
        guesses = {g for k in unknown[:5] for g in difflib.get_close_matches(k, known, n=1)}
        guess = f" (did you mean {', '.join(map(repr, sorted(guesses)))}?)" if guesses else ""
        names = ", ".join(repr(k) for k in unknown[:5]) + (" …" if len(unknown) > 5 else "")
        raise await self.refuse(
            name, arguments, context, ("unknown_argument", f"{name} has no argument {names}", guess)
        )

    async def refuse(
        self,
        name: str,
        arguments: dict[str, Any],
        context: Context | None,
        why: tuple[str, str, str],
    ) -> ToolError:
        """The error for arguments refused before the tool ran: (code, what was wrong, a hint
        of what to send), with the tool's own arguments to call it again with. A write tool's
        refusal is journaled like any rejected write: the owner sees it."""
        code, message, extra = why
        tool = await self.listed(name)
        schema = tool.input_schema if tool is not None else {}
        required = set(schema.get("required", []))
        params = [f"{p} (required)" if p in required else p for p in schema.get("properties", {})]
        takes = f"its arguments: {', '.join(params)}" if params else "it takes no arguments"
        hint = f"call {name} again with its own argument names and types; {takes}{extra}"
        if (
            tool is not None
            and tool.annotations is not None
            and not tool.annotations.read_only_hint
        ):
            path = arguments.get("path")
            paths = [fit_text(path, 300)] if isinstance(path, str) else []
            self.vault.journal.append(
                journal.Rejected(name, paths, code, message, hint, ""),
                client=client_name(context),
            )
            return ToolError(f"rejected ({code}): {message}. To fix: {hint}. Nothing was written.")
        return ToolError(f"{message}. To fix: {hint}.")


def bad_arguments(exc: ValidationError) -> tuple[str, str, str]:
    """pydantic's errors on a tool's arguments as (code, message, hint) for the model: which
    argument, what was wrong with it, and what was sent (its type, never its value)."""
    errors = exc.errors()
    said = []
    for err in errors[:5]:
        where = ".".join(str(part) for part in err["loc"]) or "arguments"
        if err["type"] == "missing":
            said.append(f"'{where}' is required")
        else:
            got = type(err.get("input")).__name__.replace("NoneType", "null")
            said.append(f"'{where}': {err['msg']} (got {got})")
    more = f"; and {len(errors) - 5} more" if len(errors) > 5 else ""
    return "bad_arguments", "; ".join(said) + more, ""
