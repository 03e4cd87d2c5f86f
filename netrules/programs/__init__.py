"""The standard NDlog programs shipped with netrules, loaded by name.

Each file opens with a comment saying what it computes; ``describe(name)`` returns it.
"""

from __future__ import annotations

import re
from importlib import resources

from netrules.lang import ast, parse_program

__all__ = ["names", "source", "load", "describe"]


def names() -> list[str]:
    """Names of the shipped programs (file names without ``.ndlog``)."""
    files = resources.files(__name__).iterdir()
    return sorted(f.name[:-6] for f in files if f.name.endswith(".ndlog"))


def source(name: str) -> str:
    if name not in names():
        raise KeyError(f"no shipped program {name!r}; known: {', '.join(names())}")
    return resources.files(__name__).joinpath(f"{name}.ndlog").read_text(encoding="utf-8")


def load(name: str) -> ast.Program:
    """Parse a shipped program."""
    return parse_program(source(name), f"{name}.ndlog")


def describe(name: str) -> str:
    """The opening comment of a shipped program: what it computes."""
    m = re.match(r"\s*/\*(.*?)\*/", source(name), re.S)
    return " ".join(m.group(1).split()) if m else ""
