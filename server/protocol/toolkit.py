"""What every tool of the MCP surface shares: `ToolKit` registers a tool behind the guard that
maps domain errors to ToolError (journaled, echoes of the model's own arguments cut), shapes its
result to the budget and journals it; the parameter and description helpers; the wording shared
by several tools' parameters. The tools themselves are in tools_read, tools_recall,
tools_recordings and tools_write; tools.build_server puts them together."""

import functools
import inspect
import sys
import traceback
from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from server.core.budget import CUT, fit_result, paths_named
from server.core.git_log import trailer_value
from server.core.state_files import StateLinked
from server.core.tool_names import ToolName
from server.index.search import IndexUnavailable
from server.notes.filters import QueryError
from server.notes.reading import ReadError
from server.protocol.results import WriteOut
from server.services.writes import (
    Conflict,
    Rejected,
    StoreError,
    after_commit,
    apply,
    batch_result_for,
    result_for,
)
from server.vault import Vault, VaultError
from server.write import journal
from server.write.journal import estimate_tokens
from server.write.write_ops import AnswerArgs, WriteArgs

# One rule for get_context, list_docs, search_text and recall (notes.superseded), said once.
SUPERSEDED = (
    "also return notes marked superseded (status: superseded, replaced by the note their "
    "superseded_by names); they are left out by default"
)


IncludeSuperseded = Annotated[bool, Field(description=SUPERSEDED)]


# One folder rule for list_docs, search_text and recall (filters.in_folder), said once.
FOLDER = "only notes in this folder and its sub-folders, e.g. 'sessions' ('sess' is no folder)"


READ = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)


# What a read tool's body returns: the result's data, and the note paths it is about (journal).
Reply = tuple[dict[str, Any], list[str]]


def describe(doc: str | None) -> str:
    """A description as one clean paragraph: it is the model's manual, and source indentation
    has no business in it."""
    return " ".join((doc or "").split())


def params_of(fn: Callable[..., Any]) -> list[inspect.Parameter]:
    """A tool body's parameters, as the client sees them (the context is the server's)."""
    return [p for p in inspect.signature(fn).parameters.values() if p.name != "ctx"]


def params_from(model: type[BaseModel]) -> list[inspect.Parameter]:
    """A write operation's model as tool parameters: each field with its type, limits and
    description, so the SDK builds the same schema from them that the model declares."""
    out = []
    for name, info in model.model_fields.items():
        attrs = info.asdict()
        keep = {
            k: v
            for k, v in attrs["attributes"].items()
            if k not in ("default", "default_factory", "repr") and v is not None
        }
        annotation = _annotated(attrs["annotation"], attrs["metadata"], Field(**keep))
        default = inspect.Parameter.empty if info.is_required() else info.default
        kind = inspect.Parameter.KEYWORD_ONLY
        out.append(inspect.Parameter(name, kind, default=default, annotation=annotation))
    return out


def _annotated(tp: Any, metadata: list[Any], field: Any) -> Any:
    return Annotated[tp, *metadata, field]


def client_name(ctx: Context | None) -> str:
    """`name/version` from the MCP handshake (or the 2026 request envelope)."""
    try:
        params = ctx.session.client_params if ctx is not None else None
    except (ValueError, AttributeError):
        return "unknown"
    info = getattr(params, "client_info", None)
    if info is None:
        return "unknown"
    name = f"{info.name}/{info.version}" if getattr(info, "version", None) else info.name
    # the peer's text: one printable line, as the commit trailer will carry it
    return trailer_value(name)


# The SDK turns a tool's signature into its argument model and both JSON schemas, about 60 ms
# for the server's 14 tools. That work depends on the signature and the words alone, never on
# the vault. A server process builds one server; a process that builds more (in-process
# clients: the test suite's hundreds) does it once per distinct tool and gives each server a
# copy that calls its own body.
_BUILT: dict[str, Tool] = {}


def built_tool(
    fn: Callable[..., Any], *, title: str, description: str, annotations: ToolAnnotations
) -> Tool:
    """The SDK's Tool for `fn` (its name and signature, with the words given), built once per
    distinct tool in this process. The key is everything the SDK reads to build it: the
    signature's text names each parameter's type, limits, default and description, and the
    output model by its module and name (one class for every server)."""
    key = repr((fn.__name__, title, description, annotations, inspect.signature(fn)))
    model = _BUILT.get(key)
    if model is None:
        model = _BUILT[key] = Tool.from_function(
            fn, title=title, description=description, annotations=annotations
        )
    return model.model_copy(update={"fn": fn})


class ToolKit:
    """Shared plumbing for the tools of one server: the tools it registers (`tools`, handed to
    the server), results, journal events, error mapping."""

    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self.tools: list[Tool] = []

    def why(self, message: str) -> str:
        """An error, plus why while the config does not load (a refusal may come from the
        stand-in rules, and the owner has a file to fix)."""
        notice = self.vault.config_notice
        if not notice or notice in message:
            return message
        return f"{message.rstrip()}{'' if message.rstrip().endswith('.') else '.'} {notice}"

    def result(
        self,
        ctx: Context | None,
        tool: ToolName,
        data: dict[str, Any],
        paths: list[str],
        *,
        commit: str | None = None,
        noop: bool = False,
    ) -> CallToolResult:
        """The tool's answer: compact JSON text plus the same as structured content, journaled
        as a `read`, a `noop`, or (with its sha) a `commit`.

        Shapes are plain dicts here (the SDK validates them once against the output model), and
        None-valued keys are left out so results stay short (budget.fit_result, which the
        owner's get_context preview goes through too). A read's journal `paths` are every note
        the result names as sent (budget.paths_named), one rule for every read tool: a listing
        named its notes, get_context its recent ones, and the owner's Reads screen counts them.
        """
        data, text = fit_result(data, self.vault.config.limits.result_chars)
        chars, tokens = len(text), estimate_tokens(text)
        event: journal.Event
        if commit is not None:
            event = journal.Commit(tool, paths, commit, chars, tokens)
        elif noop:
            event = journal.Noop(tool, paths, chars, tokens)
        else:
            event = journal.Read(tool, paths_named(data), chars, tokens)
        self.vault.journal.append(event, client=client_name(ctx))
        return CallToolResult(
            content=[TextContent(type="text", text=text)], structured_content=data
        )

    def write(
        self,
        ctx: Context | None,
        tool: ToolName,
        ops: list[tuple[str, dict[str, Any]]],
        message: str | None = None,
        answers: list[str] | None = None,
    ) -> CallToolResult:
        """Run write operations as one commit and report the outcome (journal included)."""
        client = client_name(ctx)
        log_event = functools.partial(self.vault.journal.append, client=client)
        try:
            res = apply(self.vault, self.vault.store, tool, client, ops, message, answers)
        except Rejected as exc:
            log_event(journal.Rejected(tool, exc.paths, exc.code, exc.message, exc.hint, exc.diff))
            raise ToolError(
                f"rejected ({exc.code}): {exc.message.rstrip('.')}. To fix: {exc.hint}. "
                "Nothing was written."
            ) from exc
        except Conflict as exc:
            log_event(journal.Conflict(tool, exc.path, exc.expected, exc.actual))
            raise ToolError(exc.message) from exc
        except StoreError as exc:
            log_event(journal.Error(tool, exc.code, exc.message))
            raise ToolError(exc.message) from exc
        data = batch_result_for(res) if tool == ToolName.BATCH else result_for(res)
        if res.commit is None:
            return self.result(ctx, tool, data, res.paths, noop=True)
        # The commit exists: whatever fails from here is reported beside it, never instead.
        after_commit(res, "the meaning index", lambda: self.vault.semantic_after_write(res.paths))
        data["after_commit"] = res.after_commit or None
        return self.result(ctx, tool, data, res.paths, commit=res.commit)

    def add(
        self,
        name: ToolName,
        run: Callable[..., CallToolResult],
        params: list[inspect.Parameter],
        *,
        title: str,
        description: str,
        annotations: ToolAnnotations,
        output: type[BaseModel],
    ) -> None:
        """Add one tool to `tools`: `run(ctx, **arguments)` behind the guard that maps domain errors
        to ToolError (journaled) and never lets a traceback reach the model. The SDK builds the
        input schema from `params` and validates results against `output`."""

        def tool(ctx: Context, **args: Any) -> CallToolResult:
            try:
                self.vault.check_present()
                try:
                    return run(ctx, **args)
                finally:
                    # Embedding starts with the first tool call (after the handshake) but
                    # never delays its answer; recall itself starts it too.
                    self.vault.start_semantic_soon()
            except (VaultError, QueryError, ReadError, IndexUnavailable, StateLinked) as exc:
                message, code = cut_echoes(exc.message, args), exc.code
                self.vault.journal.append(
                    journal.Error(name, code, message), client=client_name(ctx)
                )
                raise ToolError(self.why(message)) from exc
            except ToolError as exc:
                explained = self.why(cut_echoes(str(exc), args))
                if explained == str(exc):
                    raise
                raise ToolError(explained) from exc
            except Exception as exc:
                traceback.print_exc(file=sys.stderr)
                self.vault.journal.append(
                    journal.Error(name, "internal", repr(exc)[:500]), client=client_name(ctx)
                )
                raise ToolError(
                    f"{name} failed inside the server ({type(exc).__name__}); nothing was "
                    "changed. Tell the owner: the details are in the vaultwatch journal."
                ) from exc

        # What the SDK reads to build the tool: the name (its argument model's title), the
        # parameters (the input schema), Context to inject, and the output model to check.
        returns = Annotated[CallToolResult, output]
        kw = inspect.Parameter.KEYWORD_ONLY
        params = [inspect.Parameter("ctx", kw, annotation=Context), *params]
        tool.__name__ = tool.__qualname__ = name
        tool.__dict__["__signature__"] = inspect.Signature(
            [p.replace(kind=kw) for p in params], return_annotation=returns
        )
        tool.__annotations__ = {p.name: p.annotation for p in params} | {"return": returns}
        self.tools.append(
            built_tool(tool, title=title, description=description, annotations=annotations)
        )

    def read_tool(
        self, *, title: str, output: type[BaseModel]
    ) -> Callable[[Callable[..., Reply]], None]:
        """Register a read tool from its body: the name is the function's, the description
        its docstring, the parameters its own; it returns (data, paths) and the tool answers
        with them (a `read` event in the journal)."""

        def deco(fn: Callable[..., Reply]) -> None:
            name = ToolName(fn.__name__)

            def run(ctx: Context, **args: Any) -> CallToolResult:
                data, paths = fn(**args)
                return self.result(ctx, name, data, paths)

            self.add(
                name,
                run,
                params_of(fn),
                title=title,
                description=describe(fn.__doc__),
                annotations=READ,
                output=output,
            )

        return deco

    def write_tool(
        self,
        model: type[WriteArgs],
        *,
        title: str,
        idempotent: bool,
        description: str,
    ) -> None:
        """Register a write tool from its operation's model: the name and the parameters
        are the model's, and a call is that one operation, committed."""
        name = model.tool

        def run(ctx: Context, **args: Any) -> CallToolResult:
            answers = args.pop("answers", None)
            return self.write(ctx, name, [(name, args)], answers=answers)

        self.add(
            name,
            run,
            params_from(model) + params_from(AnswerArgs),
            title=title,
            description=describe(description),
            annotations=write_annotations(idempotent),
            output=WriteOut,
        )


def write_annotations(idempotent: bool) -> ToolAnnotations:
    return ToolAnnotations(
        read_only_hint=False,
        destructive_hint=False,
        idempotent_hint=idempotent,
        open_world_hint=False,
    )


ECHO_CHARS = 200  # of an argument an error repeats: as append_section caps a heading


def cut_echoes(message: str, args: dict[str, Any]) -> str:
    """`message` with every long argument it repeats cut to its first ECHO_CHARS chars. Errors
    say what was asked ("no heading '…'", "unknown type '…'"), and the model sent the rest
    itself: a 100,000-char section came back as a 40,000-char error (the whole budget). One
    place for every tool, whichever layer wrote the message; an argument is found as sent, as
    repr() writes it, or stripped."""
    values: list[str] = []
    _long_strings(args, values, 0)
    for value in sorted(set(values), key=len, reverse=True)[:20]:
        for said in (value, repr(value)[1:-1], value.strip()):
            message = _cut_runs(message, said)
    return message


def _long_strings(value: Any, out: list[str], depth: int) -> None:
    if isinstance(value, str):
        if len(value) > ECHO_CHARS:
            out.append(value)
    elif depth < 4 and isinstance(value, dict):
        for k, v in list(value.items())[:200]:
            _long_strings(k, out, depth + 1)
            _long_strings(v, out, depth + 1)
    elif depth < 4 and isinstance(value, list | tuple):
        for v in value[:200]:
            _long_strings(v, out, depth + 1)


def _cut_runs(message: str, said: str) -> str:
    """Each run of more than ECHO_CHARS chars of `message` that repeats the start of `said`,
    cut to ECHO_CHARS chars and the cut mark."""
    head = said[:ECHO_CHARS]
    if len(said) <= ECHO_CHARS or head not in message:
        return message
    out, pos = [], 0
    while (i := message.find(head, pos)) >= 0:
        lo, hi = ECHO_CHARS, min(len(said), len(message) - i)  # the run's length, bisected
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if message[i : i + mid] == said[:mid]:
                lo = mid
            else:
                hi = mid - 1
        n = lo
        out.append(message[pos:i] + head + (CUT if n > ECHO_CHARS else ""))
        pos = i + n
    return "".join(out) + message[pos:]
