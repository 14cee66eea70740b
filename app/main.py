"""`vaultwatch`: the owner's dashboard. Not built yet (see the dashboard issue); until it is,
this command says so and points at the server, rather than pretending."""

from __future__ import annotations

import sys


def main() -> None:
    print(
        "vaultwatch: the dashboard is not built yet.\n"
        "Run the vault server instead:  vaultwatch-server --vault PATH  (or --demo)",
        file=sys.stderr,
    )
    raise SystemExit(2)
