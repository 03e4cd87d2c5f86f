"""The five stages import one way: a module never imports against the data flow.

collectors -> event log -> engine -> store -> dashboard/CLI. A stage imports the stage it reads
from and the one it writes into, never a later one; the two media between the stages (the
event log and the store) import no stage that writes into or reads from them, so each can be
opened by a process that has none of the others (the dashboard has no engine, the engine
restarts from the store). Imports are read with ``ast``, so a lazy import inside a function
counts as much as one at the top of a module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Package -> layer. Modules under none of these (netrules.errors, facts, lang, plan, programs,
#: settings) are the shared kernel: any layer may import them.
LAYERS = {
    "collectors": "collectors",
    "netrules.eventlog": "eventlog",
    "netrules.engine": "engine",
    "netrules.alerts": "engine",       # evaluated by the engine on each batch
    "netrules.pipeline": "engine",     # drives sources -> log -> engine -> store
    "netrules.store": "store",
    "dashboard": "read",
    "netrules.cli": "read",
}

#: What each layer may import besides itself and the kernel.
ALLOWED = {
    "collectors": {"eventlog"},                        # writes events into the log
    "eventlog": set(),
    "engine": {"collectors", "eventlog", "store"},     # reads sources and the log, writes the store
    "store": {"eventlog"},                             # records which events a batch applied
    "read": {"store", "engine", "collectors", "eventlog"},  # the CLI also starts the pipeline
}

#: Readers that only read: the dashboard never reaches past the store.
READ_ONLY = {"dashboard": {"store"}}


def layer_of(module: str) -> tuple[str, str] | None:
    """(package prefix, layer) of ``module``, or None for the kernel."""
    best = max((p for p in LAYERS if module == p or module.startswith(p + ".")),
               key=len, default=None)
    return None if best is None else (best, LAYERS[best])


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """Absolute module names ``path`` imports (relative imports resolved), with line numbers."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            out.append((node.lineno, base))
            out += [(node.lineno, f"{base}.{a.name}") for a in node.names]
    return out


def violations(root: Path = ROOT) -> list[str]:
    """Every import that goes against the flow, as ``file:line: a -> b (layer x -> y)``."""
    found = []
    files = [p for d in ("collectors", "netrules", "dashboard") for p in (root / d).rglob("*.py")]
    for path in sorted(files):
        src = layer_of(module_name(path, root))
        if src is None:
            continue
        prefix, layer = src
        allowed = READ_ONLY.get(prefix, ALLOWED[layer])
        for line, imported in imports_of(path, root):
            dst = layer_of(imported)
            if dst is None or dst[1] == layer or dst[1] in allowed:
                continue
            where = f"{path.relative_to(root)}:{line}"
            if not any(f.startswith(where + ":") for f in found):  # one per import statement
                found.append(f"{where}: {imported} ({layer} must not import {dst[1]})")
    return sorted(found)


def test_no_module_imports_against_the_flow() -> None:
    assert violations() == []


def test_the_check_catches_the_store_importing_alerts(tmp_path: Path) -> None:
    """Put the store's old import of the alert rules back into a copy: the check fails."""
    import shutil

    for d in ("collectors", "netrules", "dashboard"):
        shutil.copytree(ROOT / d, tmp_path / d, ignore=shutil.ignore_patterns("__pycache__"))
    base = tmp_path / "netrules" / "store" / "base.py"
    base.write_text("from netrules.alerts.rules import Alert\n" + base.read_text())
    found = violations(tmp_path)
    assert found == ["netrules/store/base.py:1: netrules.alerts.rules "
                     "(store must not import engine)"]


@pytest.mark.parametrize("module, imported, ok", [
    ("netrules.store.base", "netrules.alerts", False),
    ("netrules.store.base", "netrules.eventlog.schema", True),
    ("netrules.eventlog.log", "collectors.simulate", False),
    ("netrules.engine.views", "netrules.store", True),
    ("dashboard.data", "netrules.pipeline.run", False),
    ("dashboard.data", "netrules.store.queries", True),
    ("netrules.store.queries", "dashboard.data", False),
])
def test_layer_table(module: str, imported: str, ok: bool) -> None:
    prefix, layer = layer_of(module)  # type: ignore[misc]
    dst = layer_of(imported)
    assert dst is not None
    assert (dst[1] == layer or dst[1] in READ_ONLY.get(prefix, ALLOWED[layer])) is ok
