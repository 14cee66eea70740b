"""`vaultwatch [VAULT]`: the owner's dashboard beside the AI. Starts the vault server as a
child over HTTP, shows every AI write live, reverts with one key."""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    from server.write.leases import ignore_lease_breaks

    ignore_lease_breaks()  # reverts and undos take file leases, as the server's writes do
    # A first word that is exactly a command name runs it; anything else is the vault folder
    # (a folder named like a command opens as `vaultwatch ./review`).
    from app.cli import COMMANDS

    if argv and argv[0] in COMMANDS:
        from app.cli import run

        run(argv)
    from app.cli import command_help

    ap = argparse.ArgumentParser(
        prog="vaultwatch",
        description="Watch and undo what the AI writes to your vault.",
        # each command with its one line (they were only named inside VAULT's help)
        epilog="commands (vaultwatch COMMAND --help for each):\n"
        + "\n".join(f"  {name:<11} {said}" for name, said in command_help()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument(
        "vault",
        nargs="?",
        default=".",
        help=f"vault folder (default: current folder); commands: vaultwatch {{{','.join(COMMANDS)}}}"
        " --help (a folder named like one: ./review)",
    )
    ap.add_argument(
        "--demo", action="store_true", help="a copy of example_vault and a scripted assistant"
    )
    ap.add_argument(
        "--keep", action="store_true", help="with --demo: keep the demo vault's copy after quitting"
    )
    ap.add_argument("--theme", help="vaultwatch-dark, vaultwatch-light or any Textual theme")
    ap.add_argument(
        "--port", type=int, help="HTTP port for the server (default: config http.port or any free)"
    )
    args = ap.parse_args(argv)

    from app.services.supervisor import ServerSupervisor
    from app.ui.dashboard import Dashboard
    from server.core.gitrepo import ensure_repo
    from server.notes.bundled import make_demo_vault
    from server.notes.config import ConfigError, load_config

    root = make_demo_vault() if args.demo else Path(args.vault).expanduser().absolute()
    if not root.is_dir():
        raise SystemExit(f"vaultwatch: {root} is not a folder")
    ensure_repo(root)
    port = args.port
    asked_by = "--port"
    if port is None:
        asked_by = "http.port"  # in vault.config.yaml: named so when it is not applied
        try:
            port = load_config(root).http_port or 0
        except ConfigError:
            port = 0
    # the app starts the server after its first paint and says "starting server…" meanwhile
    sup = ServerSupervisor(root, port=port, asked_by=asked_by)
    cls = _demo_app() if args.demo else Dashboard
    app = cls(root, supervisor=sup, theme=args.theme)
    app.exits_on_hangup = True
    try:
        app.run()
    finally:
        sup.stop(end_resident=args.demo)
        if args.demo:  # (the terminal may be gone: said where it can be)
            with contextlib.suppress(OSError):
                print(f"vaultwatch: {finish_demo(root, args.keep)}", file=sys.stderr)


def finish_demo(root: Path, keep: bool) -> str:
    """The demo's copy is removed on quit (each run left one in the temp folder), unless kept.
    Only a folder `make_demo_vault` made is removed: `vaultwatch-demo-*/vault`, nothing else."""
    if keep:
        return f"the demo vault is kept at {root}"
    made = root.parent
    if root.name != "vault" or not made.name.startswith("vaultwatch-demo-"):
        return f"the demo vault is kept at {root} (not a folder the demo made)"
    import shutil

    shutil.rmtree(made, ignore_errors=True)
    if made.exists():
        return f"the demo vault could not all be removed: {made}"
    return "the demo vault was removed (vaultwatch --demo --keep keeps it)"


def _demo_app() -> type:
    import asyncio

    from textual import work
    from textual.content import Content

    from app.services.demo import run_script
    from app.ui.dashboard import Dashboard

    class _Demo(Dashboard):
        demo = True

        def narrate(self, text: str) -> None:
            """The assistant's step, on the timeline's lower border: a toast per step stacked
            over half the diff at 80x24. The last one (what to try) is a toast."""
            if text.startswith("demo script finished"):
                self.notify(text, title="assistant", timeout=10)
            line = Content.styled(f" assistant: {text} ", "bold $text-accent")
            for screen in self.screen_stack:
                for t in screen.query("#timeline"):
                    t.border_subtitle = line

        def on_mount(
            self,
        ) -> None:  # Textual also runs Dashboard.on_mount (handlers follow the MRO)
            self.drive()

        @work(exclusive=True, group="demo")
        async def drive(self) -> None:
            while self.server_phase == "starting":
                await asyncio.sleep(0.1)
            if self.supervisor is None or not self.supervisor.url:
                return  # the header says why the server did not start
            try:
                await run_script(self.supervisor.url, self.supervisor.token, say=self.narrate)
            except Exception as exc:  # an ExceptionGroup too
                # the owner quit (or the server stopped) mid-script: the client's streams close
                # under it. The demo is a show; it says so, never a traceback over the terminal.
                self.notify(f"the demo assistant stopped: {type(exc).__name__}", severity="warning")

    return _Demo
