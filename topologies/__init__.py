"""Network topologies for the simulator: loaders, generators and a few bundled networks.

One model everywhere (see :mod:`topologies.load`): a networkx graph with string node names and
an int ``cost`` on every link, so a topology from the Topology Zoo, topohub or a generator
yields the same ``link(@S,D,Cost)`` facts.
"""

from topologies.generate import (
    barabasi_albert,
    fat_tree,
    fat_tree_counts,
    grid,
    line,
    ring,
    waxman,
)
from topologies.load import (
    bundled_names,
    haversine_km,
    link_facts,
    load_edgelist,
    load_gml,
    load_json,
    load_topohub,
    load_topology,
    topohub_names,
)

__all__ = [
    "barabasi_albert",
    "bundled_names",
    "fat_tree",
    "fat_tree_counts",
    "grid",
    "haversine_km",
    "line",
    "link_facts",
    "load_edgelist",
    "load_gml",
    "load_json",
    "load_topohub",
    "load_topology",
    "ring",
    "topohub_names",
    "waxman",
]
