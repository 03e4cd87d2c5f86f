"""bench/pipeline.py: what docs/engine.md quotes of it (a link event's parts) rests on its
batches being the pipeline's, one per link event, with their parts summing to the batch."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(ROOT / "bench"))
    spec = importlib.util.spec_from_file_location("bench_pipeline", ROOT / "bench" / "pipeline.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_pipeline"] = mod
    spec.loader.exec_module(mod)
    yield mod
    del sys.modules["bench_pipeline"]
    sys.path.remove(str(ROOT / "bench"))


def test_each_link_event_is_a_batch_whose_parts_make_it(bench) -> None:
    topology = "topohub:topozoo/Abilene"
    text = bench.scenario(topology, 3, seed=1)
    assert text.count("fail link") == text.count("recover link") == 3
    batches = bench.run(topology, "best_routes", pairs=3, seed=1)
    assert len(batches) == 1 + 2 * 3  # the load, then a batch per failure and recovery
    load, links = batches[0], batches[1:]
    assert load["changed"] > max(b["changed"] for b in links) > 0
    for b in batches:
        assert b["total"] == pytest.approx(b["engine"] + b["rest"] + b["store"])
        assert min(b["engine"], b["rest"], b["store"]) >= 0
    # a failure takes its routes away and the recovery brings the same number back
    for down, up in zip(links[::2], links[1::2], strict=True):
        assert down["changed"] == up["changed"]
    report = bench.report(topology, "best_routes", batches)
    assert "link events, median of 6" in report and "the load" in report
