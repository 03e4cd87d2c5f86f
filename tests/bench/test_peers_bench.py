"""The peers benchmark's agreement check: every contender is compared with networkx only after
batches it actually took, so "All contenders agree" in docs/benchmarks.md means what it says."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import pytest

PEERS = Path(__file__).resolve().parents[2] / "bench" / "peers.py"


@pytest.fixture(scope="module")
def peers():
    spec = importlib.util.spec_from_file_location("bench_peers", PEERS)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_peers"] = mod  # its dataclasses look their module up there
    spec.loader.exec_module(mod)
    yield mod
    del sys.modules["bench_peers"]


def _args(**kw) -> argparse.Namespace:
    base = {"large_nodes": 500, "singles": 2, "singles_large": 2, "reps": 1,
            "dred_max_nodes": 0, "parts": 2, "spark_large": False, "seed": 1,
            "strategies": None}
    return argparse.Namespace(**{**base, **kw})


def test_a_large_graph_checks_only_the_batches_each_contender_took(peers) -> None:
    """On a "large" graph rematerialize takes single links only; it must not be compared
    after a later workload's down batch it skipped (that reported americas as NO)."""
    res = peers.bench_topology("fat-tree", "fattree:4", _args(large_nodes=10), None)
    assert res["contenders"]["rematerialize"]["workloads"].keys() == {res["workloads"][0]}
    assert res["exact"] is True


def test_a_contender_that_disagrees_is_reported(peers, monkeypatch) -> None:
    real = peers.reach_of
    monkeypatch.setattr(peers, "reach_of", lambda state: set(list(real(state))[1:]))
    res = peers.bench_topology("fat-tree", "fattree:4", _args(), None)
    assert res["exact"] is False


def test_batch_pairs_runs_a_workload_pair_beside_networkx() -> None:
    """bench/batch_pairs.py (the A/B harness docs/engine.md quotes) runs as a user runs it."""
    import subprocess

    script = PEERS.parent / "batch_pairs.py"
    out = subprocess.run([sys.executable, str(script), "--pairs", "fattree:4=partition",
                          "--reps", "3"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    line = out.stdout.strip().splitlines()[-1]
    assert line.startswith("fattree:4 partition") and "columnar down" in line
    assert "networkx down" in line
