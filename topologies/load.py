"""Load a topology from a file, the offline ``topohub`` repository, a generator spec or a
bundled name, into the one model the simulator and collectors use.

The model: an ``nx.Graph`` (bidirectional links) or ``nx.DiGraph`` (the source said the links
are one-way) whose nodes are strings and whose edges carry ``cost`` (int, default 1) and, when
the source has coordinates or distances, ``length_km``. Node names are the source's own
names/labels, because an operator reads alerts in those names; clashes get a ``_2``, ``_3``
suffix in file order and unnamed nodes become ``n<id>``. Self-loops in external data are
dropped (counted in ``G.graph["dropped_self_loops"]``): ``link(@a,a,C)`` means nothing.

Every defect raises :class:`CollectorError` naming the file and line (or the unknown name and
what is available), never a bare networkx or JSON exception.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import networkx as nx

from netrules.errors import CollectorError, Diagnostic, SourceLoc
from netrules.facts import Fact
from topologies import generate

__all__ = [
    "DATA_DIR",
    "FILE_SUFFIXES",
    "GENERATORS",
    "bundled_names",
    "topohub_names",
    "link_facts",
    "haversine_km",
    "load_topology",
    "load_gml",
    "load_json",
    "load_edgelist",
    "load_topohub",
    "from_node_link",
    "from_generator_spec",
]

DATA_DIR = Path(__file__).resolve().parent / "data"
FILE_SUFFIXES = (".gml", ".json", ".txt", ".edges")
GENERATORS = {
    "ring": "ring:N",
    "line": "line:N",
    "grid": "grid:RxC",
    "fattree": "fattree:K[:hosts]",
    "waxman": "waxman:N[:alpha=A][:beta=B][:seed=S]",
    "ba": "ba:N:M[:seed=S]",
}


# --------------------------------------------------------------------------- model helpers


def link_facts(g: nx.Graph) -> list[Fact]:
    """``link(@S,D,Cost)`` for both directions of every undirected edge (one for a DiGraph
    edge), sorted so that the initial snapshot of a topology is always emitted in one order."""
    facts = []
    for u, v, data in g.edges(data=True):
        cost = int(data.get("cost", 1))
        facts.append(Fact("link", (u, v, cost)))
        if not g.is_directed():
            facts.append(Fact("link", (v, u, cost)))
    return sorted(facts, key=Fact.key)


def haversine_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Great-circle distance on a 6371 km sphere: the Zoo has coordinates, not fibre lengths."""
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * 6371.0 * math.asin(min(1.0, math.sqrt(a)))


def _unique_names(items: Iterable[tuple[Any, str | None]]) -> dict[Any, str]:
    """Map source ids to distinct names: the name itself, ``name_2``... on clashes, ``n<id>``
    when unnamed. Deterministic in input order."""
    items = list(items)
    taken = {str(n) for _, n in items if n not in (None, "")}
    seen: set[str] = set()
    out: dict[Any, str] = {}
    for ident, name in items:
        base = str(name) if name not in (None, "") else f"n{ident}"
        cand, k = base, 1
        while cand in seen or (cand != base and cand in taken):
            k += 1
            cand = f"{base}_{k}"
        seen.add(cand)
        out[ident] = cand
    return out


def _cost(value: Any, where: str) -> int:
    """Costs are positive ints in link facts; accept integral floats (GML writes 1.0)."""
    try:
        cost = int(value)
        ok = cost == value and cost > 0
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise CollectorError(f"{where}: link cost must be a positive integer, not {value!r}")
    return cost


def _add_link(g: nx.Graph, u: str, v: str, cost: int, length: float | None) -> None:
    """Add a link, collapsing parallel links (Zoo multigraphs) to the cheapest one."""
    if u == v:
        g.graph["dropped_self_loops"] = g.graph.get("dropped_self_loops", 0) + 1
        return
    if g.has_edge(u, v):
        data = g.edges[u, v]
        data["cost"] = min(data["cost"], cost)
        g.graph["merged_parallel_links"] = g.graph.get("merged_parallel_links", 0) + 1
        return
    attrs: dict[str, Any] = {"cost": cost}
    if length is not None:
        attrs["length_km"] = round(float(length), 3)
    g.add_edge(u, v, **attrs)


def _error(path: str, line: int, message: str, column: int = 1,
           source: str | None = None) -> CollectorError:
    loc = SourceLoc(path, line, column)
    diag = Diagnostic(CollectorError.code, message, loc, source=source)
    return CollectorError(f"{loc.file}:{loc.line}: {message}", diagnostics=[diag])


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError as err:
        raise CollectorError(f"{path}: no such topology file") from err
    except (OSError, UnicodeDecodeError) as err:
        raise CollectorError(f"{path}: cannot read topology: {err}") from err


# --------------------------------------------------------------------------------- GML

_GML_TOKEN = re.compile(
    r"""(?P<ws>[ \t\r\f\v]+)|(?P<nl>\n)|(?P<comment>\#[^\n]*)
      |(?P<open>\[)|(?P<close>\])
      |(?P<string>"[^"]*")
      |(?P<num>[+-]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)
      |(?P<key>[A-Za-z_][A-Za-z0-9_]*)""",
    re.VERBOSE,
)

_GmlItem = tuple[str, Any, int]  # key, value (scalar or list of items), line


def _gml_tokens(text: str, path: str) -> Iterator[tuple[str, str, int, int]]:
    line, line_start, pos = 1, 0, 0
    while pos < len(text):
        m = _GML_TOKEN.match(text, pos)
        if m is None:
            raise _error(path, line, f"unexpected character {text[pos]!r} in GML",
                         pos - line_start + 1, text)
        kind = m.lastgroup or ""
        if kind == "nl":
            line, line_start = line + 1, m.end()
        elif kind == "string":
            yield kind, m.group(), line, pos - line_start + 1
            nls = m.group().count("\n")
            if nls:
                line, line_start = line + nls, pos + m.group().rfind("\n") + 1
        elif kind not in ("ws", "comment"):
            yield kind, m.group(), line, pos - line_start + 1
        pos = m.end()


def _parse_gml(text: str, path: str) -> list[_GmlItem]:
    """GML as nested ``(key, value, line)`` lists; our own parser so errors carry lines."""
    stack: list[list[_GmlItem]] = [[]]
    opened: list[int] = []
    key: tuple[str, int] | None = None
    last_line = 1
    for kind, tok, line, col in _gml_tokens(text, path):
        last_line = line
        if key is None:
            if kind == "key":
                key = (tok, line)
            elif kind == "close" and len(stack) > 1:
                items = stack.pop()
                opened.pop()
                k, _, ln = stack[-1][-1]
                stack[-1][-1] = (k, items, ln)
            else:
                raise _error(path, line, f"expected a GML key, found {tok!r}", col, text)
            continue
        name, kline = key
        key = None
        if kind == "open":
            stack[-1].append((name, None, kline))
            stack.append([])
            opened.append(kline)
        elif kind == "string":
            stack[-1].append((name, tok[1:-1].replace("&quot;", '"').replace("&amp;", "&"), kline))
        elif kind == "num":
            num = float(tok) if any(c in tok for c in ".eE") else int(tok)
            stack[-1].append((name, num, kline))
        else:
            raise _error(path, line, f"expected a value for {name!r}, found {tok!r}", col, text)
    if key is not None:
        raise _error(path, last_line, f"key {key[0]!r} has no value")
    if len(stack) > 1:
        raise _error(path, opened[-1], "'[' opened here is never closed")
    return stack[0]


def load_gml(path: str | Path) -> nx.Graph:
    """A Topology Zoo style GML file: node ``label`` is the name, ``Latitude``/``Longitude``
    give ``length_km`` by haversine, ``directed 1`` gives a DiGraph, parallel links merge."""
    p = Path(path)
    where = str(p)
    text = _read_text(p)
    top = _parse_gml(text, where)
    graphs = [(v, ln) for k, v, ln in top if k == "graph"]
    if not graphs or not isinstance(graphs[0][0], list):
        raise _error(where, 1, "no 'graph [ ... ]' block")
    body, _ = graphs[0]
    scalars = {k: v for k, v, _ in body if not isinstance(v, list)}
    directed = scalars.get("directed", 0) == 1
    g: nx.Graph = nx.DiGraph() if directed else nx.Graph()
    g.graph["name"] = str(scalars.get("label", scalars.get("Network", p.stem)))
    g.graph["source"] = where

    nodes: dict[Any, dict[str, Any]] = {}
    order: list[tuple[Any, str | None]] = []
    for k, v, ln in body:
        if k != "node":
            continue
        attrs = {ak: av for ak, av, _ in v} if isinstance(v, list) else {}
        if "id" not in attrs:
            raise _error(where, ln, "node has no 'id'")
        ident = attrs["id"]
        if ident in nodes:
            raise _error(where, ln, f"node id {ident!r} is defined twice")
        nodes[ident] = attrs
        label = attrs.get("label", attrs.get("name"))
        order.append((ident, None if label is None else str(label)))
    names = _unique_names(order)
    for ident, attrs in nodes.items():
        data: dict[str, Any] = {"source_id": ident}
        lat, lon = attrs.get("Latitude"), attrs.get("Longitude")
        if isinstance(lat, int | float) and isinstance(lon, int | float):
            data["lat"], data["lon"] = float(lat), float(lon)
        g.add_node(names[ident], **data)

    for k, v, ln in body:
        if k != "edge":
            continue
        attrs = {ak: av for ak, av, _ in v} if isinstance(v, list) else {}
        ends = []
        for end in ("source", "target"):
            if end not in attrs:
                raise _error(where, ln, f"edge has no '{end}'")
            if attrs[end] not in nodes:
                raise _error(where, ln, f"edge {end} {attrs[end]!r} is not a node id")
            ends.append(names[attrs[end]])
        u, w = ends
        cost = _cost(attrs.get("cost", attrs.get("weight", 1)), f"{where}:{ln}")
        length = None
        if "length_km" in attrs:
            length = float(attrs["length_km"])
        elif all(x in g.nodes[n] for n in (u, w) for x in ("lat", "lon")):
            a, b = g.nodes[u], g.nodes[w]
            length = haversine_km(a["lat"], a["lon"], b["lat"], b["lon"])
        _add_link(g, u, w, cost, length)
    return g


# --------------------------------------------------------------------------------- JSON


def from_node_link(data: Any, where: str) -> nx.Graph:
    """A networkx node-link dict (``edges`` or ``links`` key, as topohub and networkx write).

    Names come from a node's ``name`` (topohub), else ``label``, else its id; lengths from
    ``length_km`` or topohub's ``dist`` (km); positions (``pos``) are kept. Topohub's heavy
    per-edge ECMP tables and demand matrices are dropped: the monitor does not use them.
    """
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), list):
        raise CollectorError(f"{where}: not a node-link topology (no 'nodes' list)")
    edges = data.get("edges", data.get("links"))
    if not isinstance(edges, list):
        raise CollectorError(f"{where}: not a node-link topology (no 'edges'/'links' list)")
    g: nx.Graph = nx.DiGraph() if data.get("directed") else nx.Graph()
    graph_attrs = data.get("graph") or {}
    g.graph["name"] = str(graph_attrs.get("name", Path(where).stem))
    g.graph["source"] = where
    order: list[tuple[Any, str | None]] = []
    node_attrs: dict[Any, dict[str, Any]] = {}
    for i, node in enumerate(data["nodes"]):
        if not isinstance(node, dict) or "id" not in node:
            raise CollectorError(f"{where}: nodes[{i}] has no 'id'")
        ident = node["id"]
        if ident in node_attrs:
            raise CollectorError(f"{where}: nodes[{i}]: id {ident!r} is defined twice")
        node_attrs[ident] = node
        name = node.get("name", node.get("label"))
        if name is None:
            name = ident if isinstance(ident, str) else None
        order.append((ident, None if name is None else str(name)))
    names = _unique_names(order)
    for ident, node in node_attrs.items():
        attrs: dict[str, Any] = {"source_id": ident}
        for key in ("pos", "type"):
            if key in node:
                attrs[key] = tuple(node[key]) if isinstance(node[key], list) else node[key]
        g.add_node(names[ident], **attrs)
    for i, edge in enumerate(edges):
        if not isinstance(edge, dict):
            raise CollectorError(f"{where}: edges[{i}] is not an object")
        ends = []
        for end in ("source", "target"):
            if edge.get(end) not in node_attrs:
                raise CollectorError(
                    f"{where}: edges[{i}]: {end} {edge.get(end)!r} is not a node id")
            ends.append(names[edge[end]])
        cost = _cost(edge.get("cost", edge.get("weight", 1)), f"{where}: edges[{i}]")
        length = edge.get("length_km", edge.get("dist"))
        _add_link(g, ends[0], ends[1], cost, None if length is None else float(length))
    return g


def load_json(path: str | Path) -> nx.Graph:
    """A node-link JSON file (see :func:`from_node_link`)."""
    p = Path(path)
    text = _read_text(p)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise _error(str(p), err.lineno, f"not JSON: {err.msg}", err.colno, text) from err
    return from_node_link(data, str(p))


# ---------------------------------------------------------------------------- edge list


def load_edgelist(path: str | Path) -> nx.Graph:
    """``a b [cost]`` per line (bidirectional link), ``a`` alone for an isolated node, ``#``
    starts a comment. Names cannot contain whitespace. A repeated link is an error, not a
    silent overwrite, because its two costs would disagree about which one the rules see."""
    p = Path(path)
    where = str(p)
    text = _read_text(p)
    g = nx.Graph()
    g.graph["name"] = p.stem
    g.graph["source"] = where
    first: dict[frozenset[str], int] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        fields = raw.split("#", 1)[0].split()
        if not fields:
            continue
        if len(fields) == 1:
            g.add_node(fields[0])
            continue
        if len(fields) > 3:
            raise _error(where, lineno, f"expected 'a b [cost]', found {len(fields)} fields",
                         source=text)
        u, v = fields[0], fields[1]
        if u == v:
            raise _error(where, lineno, f"self-loop {u} {v}", source=text)
        cost = 1
        if len(fields) == 3:
            try:
                cost = int(fields[2])
            except ValueError:
                cost = 0
            if cost <= 0:
                col = raw.find(fields[2], len(u) + len(v)) + 1
                raise _error(where, lineno,
                             f"cost must be a positive integer, not {fields[2]!r}", col, text)
        key = frozenset((u, v))
        if key in first:
            raise _error(where, lineno, f"link {u} {v} repeated (first on line {first[key]})",
                         source=text)
        first[key] = lineno
        g.add_edge(u, v, cost=cost)
    if g.number_of_nodes() == 0:
        raise CollectorError(f"{where}: empty topology (no nodes or links)")
    return g


# ----------------------------------------------------------------------------- topohub


def _topohub_root() -> Path | None:
    try:
        import topohub
    except ImportError:
        return None
    return Path(topohub.__file__).resolve().parent / "data"


def topohub_names() -> list[str]:
    """Every topology the installed topohub package ships (offline), e.g. ``topozoo/Abilene``,
    ``backbone/americas``, ``caida/2024-08/1103``, ``sndlib/polska``, ``gabriel/25/0``."""
    root = _topohub_root()
    if root is None or not root.is_dir():
        return []
    return sorted(str(f.relative_to(root).with_suffix("")) for f in root.rglob("*.json"))


def load_topohub(name: str) -> nx.Graph:
    """A topology from the topohub package's embedded JSON (``topohub.get(name)``; nothing is
    downloaded). A case-only mismatch (``topozoo/abilene``) resolves when unambiguous."""
    try:
        import topohub
    except ImportError as err:
        raise CollectorError("topohub is not installed (pip install topohub)") from err
    available = topohub_names()
    if name not in available:
        folded = [n for n in available if n.lower() == name.lower()]
        if len(folded) == 1:
            name = folded[0]
        else:
            close = difflib.get_close_matches(name, available, n=5, cutoff=0.5)
            groups = sorted({n.split("/", 1)[0] for n in available})
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise CollectorError(
                f"topohub has no topology {name!r} in this installation{hint} "
                f"(groups: {', '.join(groups)}; {len(available)} topologies, e.g. "
                "topozoo/Abilene, backbone/americas, sndlib/polska)"
            )
    try:
        data = topohub.get(name)
    except (KeyError, OSError, ValueError) as err:
        raise CollectorError(f"topohub: cannot read {name!r}: {err}") from err
    g = from_node_link(data, f"topohub:{name}")
    g.graph["name"] = name
    return g


# --------------------------------------------------------------------------- generators


def from_generator_spec(spec: str) -> nx.Graph:
    """``ring:6``, ``line:74``, ``grid:4x4``, ``fattree:4[:hosts]``, ``waxman:50:seed=1``,
    ``ba:100:2:seed=1`` (keyword parts ``alpha=``, ``beta=``, ``seed=`` in any order)."""
    kind, _, rest = spec.partition(":")
    usage = GENERATORS.get(kind)
    if usage is None:
        raise CollectorError(
            f"unknown generator {kind!r}; generators: {', '.join(GENERATORS.values())}")
    pos: list[str] = []
    kw: dict[str, str] = {}
    for part in filter(None, rest.split(":")):
        if "=" in part:
            k, _, v = part.partition("=")
            kw[k.strip()] = v.strip()
        else:
            pos.append(part.strip())
    try:
        seed = int(kw.pop("seed", "0"))
        if kind == "grid" and len(pos) == 1 and "x" in pos[0]:
            pos = pos[0].split("x", 1)
        if kind in ("ring", "line") and len(pos) == 1:
            fn = generate.ring if kind == "ring" else generate.line
            g = fn(int(pos[0]))
        elif kind == "grid" and len(pos) == 2:
            g = generate.grid(int(pos[0]), int(pos[1]))
        elif kind == "fattree" and len(pos) in (1, 2) and pos[1:] in ([], ["hosts"]):
            g = generate.fat_tree(int(pos[0]), hosts=pos[1:] == ["hosts"])
        elif kind == "waxman" and len(pos) == 1:
            alpha = float(kw.pop("alpha", "0.4"))
            beta = float(kw.pop("beta", "0.4"))
            g = generate.waxman(int(pos[0]), alpha=alpha, beta=beta, seed=seed)
        elif kind == "ba" and len(pos) == 2:
            g = generate.barabasi_albert(int(pos[0]), int(pos[1]), seed=seed)
        else:
            raise ValueError("wrong arguments")
        if kw:
            raise ValueError(f"unknown option(s) {', '.join(sorted(kw))}")
    except ValueError as err:
        raise CollectorError(f"bad generator spec {spec!r}: {err}; usage: {usage}") from err
    g.graph["source"] = spec
    return g


# ------------------------------------------------------------------------------ dispatch


def bundled_names() -> list[str]:
    """Names of the small topologies shipped in ``topologies/data`` (see ATTRIBUTION.md)."""
    return sorted(f.stem for f in DATA_DIR.iterdir() if f.suffix in FILE_SUFFIXES)


def _load_file(p: Path) -> nx.Graph:
    if p.suffix == ".gml":
        return load_gml(p)
    if p.suffix == ".json":
        return load_json(p)
    return load_edgelist(p)


def load_topology(spec: str) -> nx.Graph:
    """The one entry point: a file path (.gml/.json/.txt/.edges), ``topohub:<group/name>``,
    a generator spec (``ring:6`` ...) or a bundled name (``abilene`` ...)."""
    if spec.startswith("topohub:"):
        return load_topohub(spec[len("topohub:"):])
    kind = spec.split(":", 1)[0]
    if ":" in spec and kind in GENERATORS:
        return from_generator_spec(spec)
    p = Path(spec)
    if p.suffix in FILE_SUFFIXES:
        return _load_file(p)
    if spec in bundled_names():
        found = next(f for f in sorted(DATA_DIR.iterdir()) if f.stem == spec
                     and f.suffix in FILE_SUFFIXES)
        g = _load_file(found)
        g.graph["name"] = spec
        return g
    if p.exists():
        raise CollectorError(f"{spec}: unknown topology file type; use one of "
                             f"{', '.join(FILE_SUFFIXES)}")
    raise CollectorError(
        f"unknown topology {spec!r}: not a file, generator or bundled name. "
        f"Bundled: {', '.join(bundled_names()) or '(none)'}; "
        f"generators: {', '.join(GENERATORS.values())}; "
        "or topohub:<group/name> (e.g. topohub:backbone/americas) "
        "or a .gml/.json/.txt/.edges file"
    )
