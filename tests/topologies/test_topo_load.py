"""Loaders: GML (Zoo style), node-link JSON, edge lists, topohub, bundled names, and errors
that name file:line or list what is available."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from netrules.errors import CollectorError
from topologies import bundled_names, haversine_km, load_topology, topohub_names

# ------------------------------------------------------------------------------ edge lists


def test_edgelist(tmp_path: Path) -> None:
    f = tmp_path / "t.edges"
    f.write_text("# tiny\na b 3\nb c   # default cost\n\nlonely\n")
    g = load_topology(str(f))
    assert sorted(g.nodes) == ["a", "b", "c", "lonely"]
    assert g.edges["a", "b"]["cost"] == 3 and g.edges["c", "b"]["cost"] == 1
    assert not g.is_directed()


@pytest.mark.parametrize(
    "text,line,what",
    [("a b\nx y z w\n", 2, "fields"), ("a b\nb c -1\n", 2, "positive integer"),
     ("a b\n\nb a 2\n", 3, "first on line 1"), ("a a\n", 1, "self-loop"),
     ("a b\nc d x\n", 2, "'x'")],
)
def test_edgelist_errors_name_file_and_line(tmp_path: Path, text: str, line: int,
                                            what: str) -> None:
    f = tmp_path / "bad.txt"
    f.write_text(text)
    with pytest.raises(CollectorError) as ei:
        load_topology(str(f))
    assert f"{f}:{line}:" in str(ei.value)
    assert what in str(ei.value)
    assert ei.value.code == "COLLECTOR"


# ------------------------------------------------------------------------------------ GML

ZOO_GML = """\
graph [
  DateObtained "2011"
  Network "Tiny"
  multigraph 1
  node [ id 0 label "New York" Latitude 40.71 Longitude -74.01 ]
  node [ id 1 label "Chicago" Latitude 41.85 Longitude -87.65 ]
  node [ id 2 label "Chicago" Latitude 41.88 Longitude -87.63 ]
  node [ id 3 label "None" ]
  edge [ source 0 target 1 LinkLabel "OC-192" ]
  edge [ source 0 target 1 key 1 ]
  edge [ source 1 target 2 ]
  edge [ source 2 target 3 cost 4 ]
]
"""


def test_gml_zoo_labels_lengths_and_duplicates(tmp_path: Path) -> None:
    f = tmp_path / "tiny.gml"
    f.write_text(ZOO_GML)
    g = load_topology(str(f))
    assert sorted(g.nodes) == ["Chicago", "Chicago_2", "New York", "None"]
    assert g.number_of_edges() == 3  # the parallel New York-Chicago link merged
    assert g.graph["merged_parallel_links"] == 1
    km = g.edges["New York", "Chicago"]["length_km"]
    assert km == pytest.approx(haversine_km(40.71, -74.01, 41.85, -87.65), abs=1e-3)
    assert 1100 < km < 1200
    assert "length_km" not in g.edges["Chicago_2", "None"]
    assert g.edges["Chicago_2", "None"]["cost"] == 4


@pytest.mark.parametrize(
    "text,line,what",
    [
        ('graph [\n  node [ id 0 label "a" ]\n  edge [ source 0 target 9 ]\n]\n', 3, "not a node"),
        ('graph [\n  node [ id 0 ]\n  node [ id 0 ]\n]\n', 3, "defined twice"),
        ('graph [\n  node [ id 0 label "a"\n]\n', 1, "never closed"),
        ('graph [\n  node [ label "a" ]\n]\n', 2, "no 'id'"),
        ('graph [\n  node [ id 0 ] ; \n]\n', 2, "unexpected character"),
        ('graph [\n  node [ id 0 ]\n  node [ id 1 ]\n  edge [ source 0 target 1 cost 0 ]\n]\n',
         4, "positive integer"),
    ],
)
def test_gml_errors_name_file_and_line(tmp_path: Path, text: str, line: int, what: str) -> None:
    f = tmp_path / "bad.gml"
    f.write_text(text)
    with pytest.raises(CollectorError) as ei:
        load_topology(str(f))
    assert f"{f}:{line}" in str(ei.value)
    assert what in str(ei.value)


# ----------------------------------------------------------------------------------- JSON


def test_node_link_json(tmp_path: Path) -> None:
    data = {
        "directed": False, "multigraph": False, "graph": {"name": "j"},
        "nodes": [{"id": 0, "name": "x"}, {"id": 1, "name": "y"}, {"id": 7}],
        "links": [{"source": 0, "target": 1, "dist": 12.5}, {"source": 1, "target": 7,
                                                              "cost": 2}],
    }
    f = tmp_path / "t.json"
    f.write_text(json.dumps(data))
    g = load_topology(str(f))
    assert sorted(g.nodes) == ["n7", "x", "y"]
    assert g.edges["x", "y"] == {"cost": 1, "length_km": 12.5}
    assert g.edges["y", "n7"]["cost"] == 2


def test_directed_json_gives_one_way_links(tmp_path: Path) -> None:
    data = {"directed": True, "nodes": [{"id": "a"}, {"id": "b"}],
            "edges": [{"source": "a", "target": "b"}]}
    f = tmp_path / "d.json"
    f.write_text(json.dumps(data))
    g = load_topology(str(f))
    assert g.is_directed() and list(g.edges) == [("a", "b")]


def test_json_errors(tmp_path: Path) -> None:
    f = tmp_path / "bad.json"
    f.write_text('{\n  "nodes": [\n    {"id": 1},\n  ]\n}\n')
    with pytest.raises(CollectorError, match=rf"{f}:4"):
        load_topology(str(f))
    f.write_text(json.dumps({"nodes": [{"id": 1}], "edges": [{"source": 1, "target": 2}]}))
    with pytest.raises(CollectorError, match=r"edges\[0\].*target 2"):
        load_topology(str(f))


# -------------------------------------------------------------------- topohub and bundled


def test_topohub_zoo_abilene_names_and_lengths() -> None:
    if "topozoo/Abilene" not in topohub_names():
        pytest.skip("installed topohub does not ship topozoo/Abilene offline")
    g = load_topology("topohub:topozoo/Abilene")
    assert (g.number_of_nodes(), g.number_of_edges()) == (11, 14)
    assert {"New York", "Chicago", "Washington DC", "Sunnyvale"} <= set(g.nodes)
    assert g.edges["New York", "Chicago"]["length_km"] == pytest.approx(1146.16, abs=0.01)
    assert all(d["length_km"] > 0 for _, _, d in g.edges(data=True))


def test_topohub_backbone_americas() -> None:
    if "backbone/americas" not in topohub_names():
        pytest.skip("installed topohub does not ship backbone/americas offline")
    g = load_topology("topohub:backbone/americas")
    assert (g.number_of_nodes(), g.number_of_edges()) == (1138, 1474)
    assert all(isinstance(n, str) for n in g.nodes)


def test_topohub_unknown_name_lists_choices() -> None:
    with pytest.raises(CollectorError) as ei:
        load_topology("topohub:topozoo/Abilenne")
    assert "topozoo/Abilene" in str(ei.value) and "backbone" in str(ei.value)
    assert load_topology("topohub:topozoo/abilene").number_of_nodes() == 11  # case folded


def test_bundled_topologies_match_topohub() -> None:
    assert {"abilene", "geant", "nsfnet"} <= set(bundled_names())
    ab = load_topology("abilene")
    assert (ab.number_of_nodes(), ab.number_of_edges()) == (11, 14)
    # haversine from the Zoo coordinates agrees with topohub's stored distance
    assert ab.edges["New York", "Chicago"]["length_km"] == pytest.approx(1146.16, rel=0.01)
    ge = load_topology("geant")
    assert (ge.number_of_nodes(), ge.number_of_edges()) == (37, 58)
    assert load_topology("nsfnet").number_of_edges() == 15


def test_bundled_data_is_small_and_attributed() -> None:
    data = Path(__file__).resolve().parents[2] / "topologies" / "data"
    assert sum(f.stat().st_size for f in data.iterdir()) < 200_000
    assert "CC BY-SA" in (data / "ATTRIBUTION.md").read_text()


def test_unknown_spec_lists_what_is_available() -> None:
    with pytest.raises(CollectorError) as ei:
        load_topology("nosuchnet")
    msg = str(ei.value)
    assert "'nosuchnet'" in msg and "abilene" in msg and "ring:N" in msg and "topohub:" in msg
    with pytest.raises(CollectorError, match="usage: ring:N"):
        load_topology("ring:x")
    with pytest.raises(CollectorError, match="no such topology file"):
        load_topology("/nonexistent/t.gml")
