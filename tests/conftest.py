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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
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
