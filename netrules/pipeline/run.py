"""Wire a run together: program + store + event log + engine + alert rules -> a driver.

``netrules run``, ``netrules demo`` and the crash tests all go through :func:`run_pipeline`, so
a restart in any of them takes the same path: open the store, refuse a store written by
another program, rebuild the engine from the store, then let the driver skip what the store
already has.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netrules import settings
from netrules.alerts import AlertRules, WebhookNotifier
from netrules.errors import EngineError, StoreError
from netrules.eventlog import EventLog
from netrules.facts import Value
from netrules.pipeline.batch import BatchProcessor, Recovery, alert_config_for, engine_factory
from netrules.pipeline.clocked import ClockedEngine
from netrules.pipeline.once import run_once
from netrules.pipeline.recover import default_checkpoint
from netrules.pipeline.stream import run_stream
from netrules.plan import Plan
from netrules.store import BatchRecord, Store

__all__ = ["RunOptions", "RunSummary", "check_program", "run_pipeline"]


def _default(name: str) -> Any:
    return settings.get(name).default


@dataclass
class RunOptions:
    """Everything a run needs besides the program; every default is netrules.settings' (read
    from its table, never restated, so the CLI and a library caller cannot drift apart)."""

    store: str = _default("store")
    events_dir: str = _default("events_dir")
    checkpoint: str | None = _default("checkpoint")
    strategy: str = _default("strategy")
    engine: str = _default("engine")
    state: str = _default("state")  # --engine spark: views on the driver or in executors
    #: None: the Spark session's own default, which honours ``NETRULES_SPARK_MASTER``.
    spark_master: str | None = None
    once: bool = False
    follow: bool = False
    timeout: float | None = None
    batch_events: int = _default("batch_events")
    max_files_per_trigger: int = _default("max_files_per_trigger")
    trigger: float = _default("trigger")
    max_derivations: int = _default("max_derivations")
    link_relation: str = _default("link_relation")
    route_relation: str = _default("route_relation")
    reach_relation: str = _default("reach_relation")
    loop_relation: str = _default("loop_relation")
    pattern_relations: tuple[str, ...] = tuple(_default("pattern_relations").split(","))
    monitored: frozenset[tuple[Value, Value]] | None = None
    alert_config: str | None = _default("alert_config")
    webhook: str | None = _default("webhook")
    strict: bool = False  # an event the program cannot take stops the run
    #: programs with event rules, --once: run their clock to this event time after the log
    #: (None: the log's last event time plus the program's settling time, ``horizon``)
    until: float | None = None
    beacon: float = 5.0  # seconds between neighbour-discovery beacons (``discovery``)


@dataclass
class RunSummary:
    recovery: Recovery
    batches: int = 0
    events: int = 0
    replayed: int = 0
    bad_lines: list[str] = field(default_factory=list)
    spark_jobs: list[int] = field(default_factory=list)
    mode: str = "once"
    clock: float | None = None  # programs with event rules: the event time the clock reached
    ignored: dict[str, tuple[str, str]] = field(default_factory=dict)  # kind -> (where, why)


def check_program(store: Store, name: str, text: str) -> None:
    """Record the program in a fresh store; refuse a store another program wrote."""
    meta = store.meta()
    old = meta.get("program_text")
    if old is not None and old.strip() != text.strip():
        raise StoreError(
            f"{store.display} holds views of program {meta.get('program_name', '?')!r}, "
            f"not of {name!r}\nHint: use another --store, or delete this one to start over")
    if old is None:
        store.set_program(name, text)


COMPILING = ("compiling the engine's kernels: once after an install or an upgrade, about 30 s "
             "on 2 cores (cached beside the code for every run after)")


def _columnar_in_process(plan: Plan, opts: RunOptions) -> bool:
    """Whether the run's engine is the columnar one in this process (its kernels compile
    here): the in-process engine, a strategy that picks it, a program it takes."""
    from netrules.engine.strategies import columnar

    return (not plan.reactive and opts.engine == "reference"
            and opts.strategy in ("auto", "columnar") and columnar.supported(plan))


def run_pipeline(plan: Plan, store: Store, opts: RunOptions, *,
                 on_batch: Callable[[BatchRecord, bool], None] | None = None,
                 on_bad_line: Callable[[str], None] | None = None,
                 on_progress: Callable[[str, int, int], None] | None = None,
                 on_ignored: Callable[[str, str, str], None] | None = None,
                 on_compile: Callable[[str], None] | None = None) -> RunSummary:
    """Recover from ``store``, then drain (or follow) the event log with the chosen driver.

    ``on_progress(stage, done, total)`` reports recovery and replay progress;
    ``on_ignored(kind, where, why)`` is called once per kind of event the program cannot
    take (``opts.strict`` makes the first one an error instead); ``on_compile(message)``
    once, before the columnar engine's kernels compile (the first run after an install).
    """
    if on_ignored is not None:
        told: set[str] = set()
        inner = on_batch

        def on_batch(rec: BatchRecord, written: bool) -> None:
            for kind, (where, why) in processor.ignored_at.items():
                if kind not in told:
                    told.add(kind)
                    on_ignored(kind, where, why)
            if inner is not None:
                inner(rec, written)

    overrides: dict[str, Any] | None = None
    if opts.alert_config:
        overrides = json.loads(Path(opts.alert_config).read_text(encoding="utf-8"))
    config = alert_config_for(plan, route_relation=opts.route_relation,
                              reach_relation=opts.reach_relation,
                              loop_relation=opts.loop_relation,
                              pattern_relations=opts.pattern_relations,
                              monitored=opts.monitored, overrides=overrides)
    if on_compile is not None and _columnar_in_process(plan, opts):
        from netrules.engine.columnar import kernels

        # now, so that a first run's compilation is said rather than sat through in silence
        kernels.warm(lambda: on_compile(COMPILING))
    engine = (clocked_engine(plan, opts) if plan.reactive
              else engine_factory(opts.engine, opts.strategy, opts.spark_master,
                                  state=opts.state)(plan))
    processor = BatchProcessor(
        plan, engine, store, AlertRules(config), link_relation=opts.link_relation,
        max_derivations=opts.max_derivations, on_batch=on_batch,
        notifier=WebhookNotifier(opts.webhook) if opts.webhook else None)
    processor.strict = opts.strict
    report = on_progress or (lambda _s, _d, _t: None)
    report("recover", 0, 1)
    recovery = processor.recover()
    report("recover", 1, 1)
    summary = RunSummary(recovery)
    log = EventLog(opts.events_dir)
    if opts.once:
        total = len(log.segments())

        def step(segments_done: int) -> None:
            report("replay", segments_done, total)

        res = run_once(processor, log, opts.batch_events, on_bad_line=on_bad_line,
                       progress=step, until=horizon(engine, log, opts.until))
        summary.batches, summary.events = res.batches, res.events
        summary.bad_lines = res.bad_lines
        summary.ignored = dict(processor.ignored_at)
        summary.clock = getattr(engine, "now", None)
        return summary
    checkpoint = opts.checkpoint or default_checkpoint(opts.events_dir)
    sres = run_stream(processor, opts.events_dir, checkpoint, spark_master=opts.spark_master,
                      max_files_per_trigger=opts.max_files_per_trigger,
                      trigger_seconds=opts.trigger, follow=opts.follow, timeout=opts.timeout,
                      on_bad_line=on_bad_line)
    summary.mode = "stream"
    summary.batches, summary.events, summary.replayed = sres.batches, sres.events, sres.replayed
    summary.bad_lines, summary.spark_jobs = sres.bad_lines, sres.spark_jobs
    summary.ignored = dict(processor.ignored_at)
    summary.clock = getattr(engine, "now", None)
    return summary


def clocked_engine(plan: Plan, opts: RunOptions) -> ClockedEngine:
    """The engine of a program with event rules: ``Reactive`` in process, on event time."""
    if opts.engine != "reference":
        raise EngineError(f"the program has event rules, which run in process on the "
                          f"reference engine, not on --engine {opts.engine}")
    if opts.state != "driver":
        raise EngineError(f"the program has event rules, which run in process: --state "
                          f"{opts.state} does not apply")
    return ClockedEngine(plan, opts.strategy, link_relation=opts.link_relation,
                         beacon=opts.beacon)


def horizon(engine: object, log: EventLog, until: float | None) -> float | None:
    """Where ``--once`` leaves an engine's clock: ``until``, or by default the log's last
    event time plus the program's settling time on the nodes the log names (None: an engine
    without a clock). Read from the log alone, so a restart picks the same horizon."""
    if not isinstance(engine, ClockedEngine):
        return None
    if until is not None:
        return until
    last, nodes = 0.0, set()
    for e in log.read(strict=False, errors=[]):
        last = max(last, e.time)
        nodes.add(e.fact.args[e.fact.loc or 0] if e.fact.args else None)
    return last + engine.settle(len(nodes))
