"""The C-preprocessor lines P2 and RapidNet programs use: ``#define NAME text`` and
``#include "file"``, expanded before parsing, with a source map back to the written text.

Programs in the wild keep constants in ``#define`` lines and share declarations through
``#include``; an error must still point at the file and line the user wrote, so every expanded
line remembers where it came from, and every column inside it where its piece started (a
macro's expansion maps to the macro's name). Nothing is evaluated: a macro is plain text.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from netrules.errors import NdlogSyntaxError, SourceLoc

__all__ = ["Expanded", "preprocess"]

_DIRECTIVE = re.compile(r"^\s*#\s*(\w*)(.*)$")
_DEFINE = re.compile(r"^\s+([A-Za-z_]\w*)(?:\s+(.*?))?\s*$")
_INCLUDE = re.compile(r'^\s+"([^"]+)"\s*$')
_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|//.*$|[A-Za-z_]\w*')


@dataclass
class _Line:
    file: str
    line: int
    starts: list[int] = field(default_factory=lambda: [1])  # expanded column of each piece
    origins: list[int] = field(default_factory=lambda: [1])  # its written column
    fixed: list[bool] = field(default_factory=lambda: [False])  # a macro body: no offset


@dataclass
class Expanded:
    """Preprocessed text plus the map from its (line, column) to the written ones."""

    text: str
    lines: list[_Line]
    sources: dict[str, str]

    def origin(self, line: int, column: int) -> SourceLoc:
        """Where expanded ``line``:``column`` (1-based) was written."""
        if not self.lines:
            return SourceLoc("<program>", line, column)
        src = self.lines[min(max(line, 1), len(self.lines)) - 1]
        i = bisect.bisect_right(src.starts, column) - 1
        col = src.origins[i] if src.fixed[i] else src.origins[i] + column - src.starts[i]
        return SourceLoc(src.file, src.line, col)


def _error(msg: str, file: str, line: int, column: int, text: str) -> NdlogSyntaxError:
    return NdlogSyntaxError(msg, SourceLoc(file, line, column), text, [], "preprocessor")


def preprocess(text: str, file: str = "<program>",
               read: Callable[[str], str] | None = None) -> Expanded:
    """Expand ``#define`` and ``#include`` lines; errors (an unknown directive, a missing or
    recursive include) name the written file, line and column. ``read`` loads an included
    path (resolved against the including file's folder); the default reads the disk."""
    reader = read or (lambda p: Path(p).read_text(encoding="utf-8"))
    macros: dict[str, str] = {}
    out_text: list[str] = []
    out_lines: list[_Line] = []
    sources: dict[str, str] = {file: text}

    def expand(line: str, where: _Line) -> str:
        pieces: list[str] = []
        pos = 0
        for m in _TOKEN.finditer(line):
            body = macros.get(m.group())
            if body is None:
                continue
            pieces.append(line[pos:m.start()])
            out_col = sum(map(len, pieces)) + 1
            where.starts.append(out_col)
            where.origins.append(m.start() + 1)
            where.fixed.append(True)
            pieces.append(body)
            where.starts.append(out_col + len(body))
            where.origins.append(m.end() + 1)
            where.fixed.append(False)
            pos = m.end()
        pieces.append(line[pos:])
        return "".join(pieces)

    def run(src: str, name: str, stack: tuple[str, ...]) -> None:
        for n, raw in enumerate(src.splitlines(), 1):
            d = _DIRECTIVE.match(raw)
            if d is None:
                where = _Line(name, n)
                out_text.append(expand(raw, where))
                out_lines.append(where)
                continue
            what, rest = d.group(1), d.group(2)
            col = raw.index("#") + 1
            if what == "define":
                m = _DEFINE.match(rest)
                if m is None:
                    raise _error("#define needs a name: #define NAME text", name, n, col, src)
                macros[m.group(1)] = expand(m.group(2) or "", _Line(name, n))
            elif what == "include":
                m = _INCLUDE.match(rest)
                if m is None:
                    raise _error('#include needs a quoted file name: #include "file"',
                                 name, n, col, src)
                target = str(Path(name).parent / m.group(1)) if name[:1] != "<" else m.group(1)
                if target in stack:
                    raise _error(f"#include of {m.group(1)} is recursive", name, n, col, src)
                try:
                    included = reader(target)
                except OSError as err:
                    raise _error(f"#include cannot read {m.group(1)}: {err.strerror or err}",
                                 name, n, col, src) from None
                sources[target] = included
                run(included, target, (*stack, target))
                continue
            else:
                raise _error(f"preprocessor directive #{what} is not supported (only #define "
                             "and #include)", name, n, col, src)
            out_text.append("")  # keep the written line numbers of the including file
            out_lines.append(_Line(name, n))

    run(text, file, (file,))
    return Expanded("\n".join(out_text) + ("\n" if text.endswith("\n") else ""), out_lines,
                    sources)
