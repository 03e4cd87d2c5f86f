"""Replace one marked section of docs/benchmarks.md, so each bench script regenerates its own
part and the rest of the page is kept."""

from __future__ import annotations

from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"


def replace_section(name: str, body: str, doc: Path = DOC) -> None:
    """Write ``body`` between ``<!-- name:begin -->`` and ``<!-- name:end -->`` (appended when
    the markers are missing)."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    text = doc.read_text(encoding="utf-8") if doc.exists() else "# Benchmarks\n"
    block = f"{begin}\n{body.rstrip()}\n{end}"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        text = head + block + tail
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    doc.write_text(text, encoding="utf-8")
