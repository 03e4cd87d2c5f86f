"""Rules about our own source that a linter does not know."""

from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
SOURCES = sorted(p for d in ("netrules", "collectors", "dashboard", "bench")
                 for p in (ROOT / d).rglob("*.py"))

#: NumPy set routines that, called this way, dedupe through ``np.unique``'s hash set
#: (``netrules.engine.columnar.sets`` says why that is slow)
_UNIQUE = {"unique", "union1d", "setdiff1d", "intersect1d", "setxor1d"}


def _plain_unique_calls(tree: ast.AST) -> list[int]:
    """Lines calling a set routine of ``np`` that will run a plain (hash) ``unique``."""
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "np"
                and node.func.attr in _UNIQUE):
            continue
        kw = {k.arg: k.value for k in node.keywords}
        if node.func.attr == "unique":
            if not any(a.startswith("return_") or a == "axis" for a in kw if a):
                out.append(node.lineno)
        elif not (isinstance(kw.get("assume_unique"), ast.Constant)
                  and kw["assume_unique"].value is True):
            out.append(node.lineno)
    return out


def test_the_rule_sees_what_it_forbids() -> None:
    src = ("np.unique(a)\nnp.unique(a, return_index=True)\nnp.union1d(a, b)\n"
           "np.setdiff1d(a, b)\nnp.setdiff1d(a, b, assume_unique=True)\n")
    assert _plain_unique_calls(ast.parse(src)) == [1, 3, 4]


def test_ids_are_deduped_by_sorting() -> None:
    found = [f"{p.relative_to(ROOT)}:{line}" for p in SOURCES
             for line in _plain_unique_calls(ast.parse(p.read_text(), str(p)))]
    assert not found, ("plain np.unique (or a set routine built on it), use "
                       f"netrules.engine.columnar.sets.distinct: {', '.join(found)}")
