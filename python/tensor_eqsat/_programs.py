"""Console scripts: eqsat-run, ruleverify and rulegen as the package installs them (pyproject.toml,
[project.scripts]). Each runs the program built with the package (tensor_eqsat/bin), which finds the
package's corpus beside it (tensor_eqsat/share/tensor_eqsat/corpus)."""
from __future__ import annotations

import os
import sys
from pathlib import Path


def _run(program: str) -> None:
    binary = Path(__file__).resolve().parent / "bin" / program
    if not binary.is_file():
        sys.exit(f"{program}: error: {binary} is missing; reinstall tensor-eqsat")
    os.execv(binary, [str(binary), *sys.argv[1:]])


def eqsat_run() -> None:
    _run("eqsat-run")


def ruleverify() -> None:
    _run("ruleverify")


def rulegen() -> None:
    _run("rulegen")
