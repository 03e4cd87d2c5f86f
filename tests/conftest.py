"""Shared fixtures: one session-scoped local SparkSession, --runslow, hypothesis profiles."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("ci", deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true", help="also run tests marked slow")
    parser.addoption("--strategy", action="append", default=None,
                     help="run the engine suite against this maintenance strategy only "
                          "(repeatable; default: every strategy in STRATEGIES)")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Every test taking ``strategy`` runs once per maintenance strategy (networkx's
    --backend idea): the whole engine suite is the contract each strategy must meet."""
    if "strategy" in metafunc.fixturenames:
        from netrules.engine.strategies import STRATEGIES

        chosen = metafunc.config.getoption("--strategy") or list(STRATEGIES)
        unknown = set(chosen) - set(STRATEGIES)
        if unknown:
            raise pytest.UsageError(f"unknown --strategy {sorted(unknown)}; "
                                    f"known: {sorted(STRATEGIES)}")
        metafunc.parametrize("strategy", [STRATEGIES[n] for n in chosen], ids=chosen)


#: Tests (node id prefixes) that take 20 s or more on CI's two cores, with their seconds there
#: (``--durations``, 2026-11-28); a prefix's tests stay together (a module's fixture is made
#: once). See ``_long_first``.
LONG = {
    "tests/cluster/": 185, "tests/pipeline/test_crash.py::test_streaming": 104,
    "tests/engine/test_regional.py::test_network_programs": 80,
    "tests/engine/test_regional.py::test_random_stratified": 75,
    "tests/engine/test_regional.py::test_random_located": 45,
    "tests/pipeline/test_crash.py::test_once_runner": 49,
    "tests/engine/test_resident.py::test_resident_equals_reference": 100,
    "tests/engine/test_spark.py::test_spark_random": 35,
    "tests/engine/test_spark.py::test_spark_network": 31,
    "tests/dashboard/test_dashboard_browser.py": 40,
    "tests/bench/test_peers_bench.py": 30, "tests/engine/test_argmin.py::test_spark": 27,
    "tests/engine/test_session.py::test_workers": 22,
    "tests/engine/test_regional.py::test_routing_loops": 20,
    **{f"tests/engine/test_differential.py::test_random_programs[{s}]": 30
       for s in ("auto", "columnar", "psn", "dred", "fbf", "counting", "rematerialize")},
}


def _long_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """``items`` reordered so that each half of them starts with its share of the ``LONG``
    tests, the longest first, shared out so both halves hold about the same seconds.

    Why: xdist's ``worksteal`` gives each of the two workers one contiguous half and, when one
    runs dry, moves the far end of the other's queue over. A long test near the end of a half
    cannot be moved and ran alone while the other core idled (the suite's time moved by a
    minute or more with where the cluster and crash tests fell); at the front, the halves end
    on short tests that stealing evens out."""
    groups: dict[str, list[pytest.Item]] = {}
    rest = []
    for item in items:
        key = next((p for p in LONG if item.nodeid.startswith(p)), None)
        if key is None:
            rest.append(item)
        else:
            groups.setdefault(key, []).append(item)
    halves: tuple[list[pytest.Item], list[pytest.Item]] = ([], [])
    load = [0.0, 0.0]
    for key in sorted(groups, key=LONG.__getitem__, reverse=True):
        side = 0 if load[0] <= load[1] else 1
        halves[side].extend(groups[key])
        load[side] += LONG[key]
    half = len(items) // 2  # xdist's first worker takes items[:half]
    cut = max(0, half - len(halves[0]))
    return halves[0] + rest[:cut] + halves[1] + rest[cut:]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items[:] = _long_first(items)
    if config.getoption("--runslow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def spark():
    """One local[2] SparkSession for the whole run (UI off, few shuffle partitions)."""
    from netrules.engine.session import get_spark

    session = get_spark()
    yield session
    session.stop()


_WORKER_CASES = pytest.StashKey[int]()  # the controller's sum of its workers' counts


def _cases_here() -> int:
    """Random differential cases this process checked."""
    import sys

    mod = sys.modules.get("tests.engine.test_differential")
    return mod.CASES[0] if mod is not None else 0


def pytest_sessionfinish(session: pytest.Session) -> None:
    """An xdist worker reports its count to the controller."""
    out = getattr(session.config, "workeroutput", None)
    if out is not None:
        out["differential_cases"] = _cases_here()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:  # noqa: ANN001 - xdist's hook, controller side
    cfg = node.config
    cfg.stash[_WORKER_CASES] = cfg.stash.get(_WORKER_CASES, 0) + int(
        getattr(node, "workeroutput", {}).get("differential_cases", 0))


def pytest_terminal_summary(terminalreporter) -> None:  # noqa: ANN001
    """How many random differential cases ran (issue 19 asks CI for at least 10,000), summed
    over xdist's workers when the suite runs on them."""
    cases = _cases_here() + terminalreporter.config.stash.get(_WORKER_CASES, 0)
    if cases:
        terminalreporter.write_line(
            f"random differential cases checked against the oracle: {cases:,}")
