"""The ``netrules`` command line: a thin click group over the public API.

Every command that reads input reports bad input as ``file:line:col: error[CODE]: ...`` with a
caret line and exits with status 1; ``--json`` makes output machine-readable.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from netrules import programs, settings
from netrules.errors import NetrulesError
from netrules.facts import Fact, value_to_json
from netrules.lang import ast, parse_atom, parse_facts, parse_program, parse_updates
from netrules.plan import Plan, plan_program

__all__ = ["main", "load_program_arg"]


def load_program_arg(spec: str) -> ast.Program:
    """A program from a file path, or a shipped program by name (``reachability``)."""
    path = Path(spec)
    if path.is_file():
        return parse_program(path.read_text(encoding="utf-8"), str(path))
    if spec in programs.names():
        return programs.load(spec)
    raise click.ClickException(
        f"no program file {spec!r}, and it is not a shipped program "
        f"({', '.join(programs.names())})")


def _fail(err: NetrulesError) -> None:
    click.echo(err.render(), err=True)
    sys.exit(1)


def views_json(views: dict[str, list[Fact]], relations: frozenset[str] | set[str]
               ) -> dict[str, list[list]]:
    """``{"relation": [[arg, ...], ...]}`` for the given relations, facts sorted."""
    return {
        rel: [[value_to_json(a) for a in f.args] for f in sorted(views.get(rel, []),
                                                                 key=Fact.key)]
        for rel in sorted(relations)
    }


def _print_views(views: dict[str, list[Fact]], relations: frozenset[str]) -> None:
    for rel in sorted(relations):
        facts = sorted(views.get(rel, []), key=Fact.key)
        click.echo(f"{rel} ({len(facts)} fact{'s' if len(facts) != 1 else ''})")
        for f in facts:
            click.echo(f"  {f}")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="netrules")
@click.option("-v", "--verbose", is_flag=True,
              help="Spark and JVM logs on the console (default: a file, see NETRULES_SPARK_LOG).")
def main(verbose: bool) -> None:
    """netrules: a rule-based network monitor. NDlog views over your network, kept exact as
    links fail and recover."""
    if verbose:  # read where the SparkSession is built, so it reaches every engine
        import os

        os.environ["NETRULES_VERBOSE"] = "1"


@main.command()
@click.argument("program")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
@click.option("--facts", "facts_path", type=click.Path(exists=True, dir_okay=False),
              help="Also check a facts file against the program (relations, arities).")
@click.option("--updates", "updates_path", type=click.Path(exists=True, dir_okay=False),
              help="Also check an updates file against the program.")
def check(program: str, as_json: bool, facts_path: str | None, updates_path: str | None
          ) -> None:
    """Parse and plan PROGRAM (a file or a shipped program name); print strata and localized
    rules, or every error with its location (exit status 1). With --facts/--updates, a fact
    for an unknown relation or with the wrong arity is an error naming its file and line."""
    try:
        plan = plan_program(load_program_arg(program))
        _read_facts(facts_path, plan)
        if updates_path:
            parse_updates(Path(updates_path).read_text(encoding="utf-8"), updates_path,
                          arity=plan.arity, derived=plan.derived)
    except NetrulesError as err:
        _fail(err)
        return
    if as_json:
        click.echo(json.dumps({
            "base": sorted(plan.base),
            "strata": [{"index": s.index, "relations": sorted(s.relations),
                        "recursive": s.recursive, "rules": [str(r) for r in s.rules]}
                       for s in plan.strata],
            "aux": sorted(plan.aux),
            "delta_rules": [str(d) for d in plan.delta_rules()],
        }, indent=2))
    else:
        click.echo(plan.describe())


def _read_facts(path: str | None, plan: Plan | None = None) -> list[Fact]:
    if path is None:
        return []
    if plan is None:
        return parse_facts(Path(path).read_text(encoding="utf-8"), path)
    return parse_facts(Path(path).read_text(encoding="utf-8"), path, arity=plan.arity,
                       derived=plan.derived)


@main.command(name="eval")
@click.argument("program")
@click.option("--facts", "facts_path", type=click.Path(exists=True, dir_okay=False),
              help="Ground facts, one per line: link(@a,b,1).")
@click.option("--updates", "updates_path", type=click.Path(exists=True, dir_okay=False),
              help="Update batches: lines +fact. / -fact., batches separated by ---.")
@click.option("--engine", type=click.Choice(["reference", "spark"]), default="reference",
              show_default=True, help="Who computes the views.")
@click.option("--strategy", default=None, help="Maintenance strategy (spark engine).")
@click.option("--state", "state_at", type=click.Choice(["driver", "spark"]), default="driver",
              show_default=True,
              help="Spark engine: keep the maintained state on the driver (fastest while it "
                   "fits) or in Spark executors, region by region.")
@click.option("--shuffle", type=int, default=None,
              help="Deliver each batch's updates in a random order from this seed.")
@click.option("--json", "as_json", is_flag=True, help="Print views as JSON.")
@click.option("--until", type=float, default=None, metavar="T",
              help="Programs with event rules: run their clock on to event time T after the "
                   "last batch (facts are at time 0, an update at its place in the file).")
def eval_cmd(program: str, facts_path: str | None, updates_path: str | None, engine: str,
             strategy: str | None, state_at: str, shuffle: int | None, as_json: bool,
             until: float | None) -> None:
    """Evaluate PROGRAM over FACTS and print every derived relation. With --updates, apply
    each batch and print the views after it (JSON: a list, one object per batch). A program
    with event rules prints the tables they write, on the event-time clock (--until)."""
    from netrules.engine.runner import run_batches

    try:
        prog = load_program_arg(program)
        plan = plan_program(prog)
        arity = {**plan.arity, **plan.external}  # events fed from outside are input too
        facts = (parse_facts(Path(facts_path).read_text(encoding="utf-8"), facts_path,
                             arity=arity, derived=plan.derived) if facts_path else [])
        batches = None
        if updates_path:
            batches = parse_updates(Path(updates_path).read_text(encoding="utf-8"),
                                    updates_path, arity=arity, derived=plan.derived)
        if plan.reactive:
            results = _eval_clocked(plan, facts, batches, engine, strategy, until)
        else:
            results = run_batches(plan, facts, batches, engine=engine, strategy=strategy,
                                  shuffle=shuffle, state=state_at)
    except NetrulesError as err:
        _fail(err)
        return
    relations = plan.visible | _tables(plan)
    if batches is None:
        views = results[0]
        if as_json:
            click.echo(json.dumps(views_json(views, relations), indent=None))
        else:
            _print_views(views, relations)
        return
    if as_json:
        click.echo(json.dumps([views_json(v, relations) for v in results[1:]]))
    else:
        for i, views in enumerate(results[1:], 1):
            click.echo(f"--- after batch {i}")
            _print_views(views, relations)


def _eval_clocked(plan: Plan, facts: list[Fact], batches, engine: str,
                  strategy: str | None, until: float | None) -> list:
    from netrules.errors import EngineError
    from netrules.pipeline.clocked import eval_batches

    if engine != "reference":
        raise EngineError(f"the program has event rules, which run in process on the "
                          f"reference engine, not on --engine {engine}")
    return eval_batches(plan, facts, batches, strategy=strategy or "auto", until=until)


def _register_optional() -> None:
    """Commands from the other stages, registered when their modules are present."""
    import importlib

    for module, names in (("collectors.commands", ("replay", "capture")),
                          ("collectors.sim_commands", ("simulate",))):
        try:
            mod = importlib.import_module(module)
        except ImportError:
            continue
        for name in names:
            cmd = getattr(mod, name, None) or getattr(mod, f"{name}_cmd", None)
            if isinstance(cmd, click.Command):
                main.add_command(cmd, name)


_register_optional()


# --------------------------------------------------------------------------- the pipeline
# run / demo write the store; every other command below only reads it.

_READ_HINT = ("Hint: create a store with `netrules demo` or `netrules run PROGRAM ...`, "
              "or point --store at one")


def _click_error(err: NetrulesError, hint: str | None = None) -> click.ClickException:
    text = err.render()
    if hint and "Hint:" not in text:
        text += "\n" + hint
    return click.ClickException(text)


def _open_store(url: str, read_only: bool = False):
    from netrules.store import open_store, parse_store_url

    try:
        parsed = parse_store_url(url)
        if not read_only and parsed.backend == "sqlite" and parsed.target != ":memory:":
            Path(parsed.target).resolve().parent.mkdir(parents=True, exist_ok=True)
        return open_store(url, read_only=read_only)
    except NetrulesError as err:
        raise _click_error(err, _READ_HINT if read_only else None) from err


def _store_opt(fn):
    from netrules import settings

    return settings.option("store")(fn)


def _json_opt(fn):
    return click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON.")(fn)


def _alert_line(batch_id: int, alert) -> str:
    return f"[batch {batch_id}] RAISED  {alert.severity:<8} {alert.message}"


def _cleared_line(batch_id: int, key: str) -> str:
    kind, _, rest = key.partition(":")
    return f"[batch {batch_id}] CLEARED {kind}: {rest}"


def _batch_printer(quiet: bool, show: int = 10):
    """The on_batch callback: alerts as they fire, at most ``show`` of each kind per batch."""
    def on_batch(rec, written: bool) -> None:
        if not written or quiet:
            return
        plus, minus = rec.counts()
        st = rec.stats
        took = st.get("seconds_total", st.get("seconds", 0))
        # (rows are rendered as the store writes them; the rest is alerts and derivations)
        store = took - st.get("seconds", took)
        click.echo(f"[batch {rec.batch_id}] {st.get('events', len(rec.events))} events: "
                   f"+{sum(plus.values())} -{sum(minus.values())} facts, "
                   f"{len(rec.alerts_raised)} alerts raised, {len(rec.alerts_cleared)} cleared "
                   f"({took:.2f} s; engine {st.get('engine_seconds', 0):.2f} s, "
                   f"store write {store:.2f} s, {st.get('strategy', '')})")
        for lines in ([_alert_line(rec.batch_id, a) for a in rec.alerts_raised],
                      [_cleared_line(rec.batch_id, k) for k in rec.alerts_cleared]):
            for line in lines[:show]:
                click.echo(line)
            if len(lines) > show:
                click.echo(f"[batch {rec.batch_id}] ... and {len(lines) - show} more "
                           f"(netrules alerts)")
    return on_batch


class _Progress:
    """click.progressbar per stage of a run, on stderr so stdout stays the alerts."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.bars: dict[str, object] = {}
        self.done: dict[str, int] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled or total <= 0:
            return
        label = {"recover": "rebuilding engine state from the store",
                 "replay": "replaying the event log",
                 "append": "writing the event log"}.get(stage, stage)
        bar = self.bars.get(stage)
        if bar is None:
            bar = click.progressbar(length=total, label=label, file=sys.stderr)
            bar.__enter__()
            self.bars[stage] = bar
            self.done[stage] = 0
        bar.update(done - self.done[stage])  # type: ignore[attr-defined]
        self.done[stage] = done
        if done >= total:
            bar.__exit__(None, None, None)  # type: ignore[attr-defined]

    def close(self) -> None:
        for bar in self.bars.values():
            bar.render_finish()  # type: ignore[attr-defined]


def _monitor_pairs(values: tuple[str, ...]) -> frozenset[tuple[str, str]] | None:
    pairs = []
    for v in values:
        parts = [p.strip() for p in v.split(",")]
        if len(parts) != 2 or not all(parts):
            raise click.BadParameter(f"{v!r}: expected A,B (two node names)",
                                     param_hint="--monitor")
        pairs.append((parts[0], parts[1]))
    return frozenset(pairs) if pairs else None


def _write_source(*, topology: str | None, scenario: str | None, seed: int | None,
                  fail_link: tuple[tuple[str, str], ...], at: float,
                  random_failures: str | None, tick: float, capture_file: str | None,
                  events_dir: str, store, progress: _Progress) -> tuple[int, object]:
    """Append the chosen source's events to the event log; (new events, graph or None)."""
    from netrules.eventlog import EventLog
    from netrules.pipeline.sources import append_new, simulation, topology_rows
    from netrules.pipeline.sources import capture_file as read_capture

    log = EventLog(events_dir)
    if topology is not None:
        sim = simulation(topology, scenario, seed, fail_link, at, random_failures)
        n = append_new(log, sim.events, tick=tick,
                       progress=lambda done, total: progress("append", done, total))
        nodes, _ = store.topology()
        if not nodes:  # a restart keeps the link states the batches wrote
            store.set_topology(*topology_rows(sim.graph))
        return n, sim.graph
    if capture_file is not None:
        events, report = read_capture(capture_file)
        n = append_new(log, events, tick=tick,
                       progress=lambda done, total: progress("append", done, total))
        click.echo(report, err=True)
        return n, None
    return 0, None


@main.command()
@click.argument("program")
@click.option("--simulate", "topology", metavar="TOPO",
              help="Simulate TOPO (ring:6, grid:4x4, abilene, topohub:..., a file).")
@click.option("--scenario", type=click.Path(exists=True, dir_okay=False),
              help="Failure scenario file for --simulate (see examples/).")
@click.option("--seed", type=int, default=None, help="Random seed of the simulation.")
@click.option("--fail-link", nargs=2, multiple=True, metavar="A B",
              help="--simulate: fail link A-B at time --at. Repeatable.")
@click.option("--at", type=float, default=1.0, show_default=True,
              help="Time of the --fail-link failures.")
@click.option("--random-failures", metavar="MTBF,MTTR,UNTIL",
              help="--simulate: random link failures.")
@click.option("--tick", type=float, default=0.0, show_default=True,
              help="Source seconds per event-log segment (0: one segment per instant).")
@click.option("--capture", "capture_file", type=click.Path(exists=True, dir_okay=False),
              help="Replay a pcap/pcapng capture.")
@click.option("--iface", help="Capture live on an interface (needs CAP_NET_RAW); follows.")
@click.option("--events", "events_src", type=click.Path(file_okay=False),
              help="Read an existing event-log directory (written by collectors).")
@_store_opt
@settings.option("events_dir")
@settings.option("checkpoint")
@settings.option("strategy")
@settings.option("engine", type=click.Choice(["reference", "spark"]))
@settings.option("state", type=click.Choice(["driver", "spark"]))
@settings.option("spark_master")
@click.option("--once", is_flag=True,
              help="No Spark: read the whole log, apply it in batches, write, exit.")
@click.option("--follow/--no-follow", default=None,
              help="Keep waiting for new segments (default: only with --iface).")
@click.option("--timeout", type=float, default=None, help="--follow: stop after S seconds.")
@settings.option("batch_events")
@settings.option("max_files_per_trigger")
@settings.option("trigger")
@settings.option("max_derivations")
@click.option("--monitor", multiple=True, metavar="A,B",
              help="Reachability pair to alert on (repeatable; default: every pair).")
@settings.option("webhook")
@settings.option("alert_config", type=click.Path(exists=True, dir_okay=False))
@settings.option("link_relation")
@settings.option("route_relation")
@settings.option("reach_relation")
@settings.option("loop_relation")
@settings.option("pattern_relations")
@click.option("--json", "as_json", is_flag=True,
              help="At the end print the run summary, the views and the active alerts as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="Do not print alerts as they fire.")
@click.option("--strict", is_flag=True,
              help="Stop at the first event the program cannot take (unknown relation, wrong "
                   "arity) instead of counting it.")
@click.option("--until", type=float, default=None, metavar="T",
              help="Programs with event rules, --once: run their event-time clock to T after "
                   "the log (default: the last event's time plus the program's longest table "
                   "lifetime plus one round of its slowest periodic timer).")
@click.option("--beacon", type=float, default=5.0, show_default=True, metavar="S",
              help="Programs taking link as an event: seconds between the announcements of "
                   "each live link (neighbour discovery; 0: only when it comes up).")
def run(program: str, topology: str | None, scenario: str | None, seed: int | None,
        fail_link: tuple[tuple[str, str], ...], at: float, random_failures: str | None,
        tick: float, capture_file: str | None, iface: str | None, events_src: str | None,
        store: str, events_dir: str, checkpoint: str | None, strategy: str, engine: str,
        state: str, spark_master: str, once: bool, follow: bool | None, timeout: float | None,
        batch_events: int, max_files_per_trigger: int, trigger: float, max_derivations: int,
        monitor: tuple[str, ...], webhook: str | None, alert_config: str | None,
        link_relation: str, route_relation: str, reach_relation: str, loop_relation: str,
        pattern_relations: str, as_json: bool, quiet: bool, strict: bool,
        until: float | None, beacon: float) -> None:
    """Run PROGRAM over a source, through the event log, into the store; print alerts as
    they fire.

    The source (--simulate, --capture, --iface or --events) is appended to the event log
    (idempotently: rerunning after a crash adds nothing twice), then the pipeline applies it:
    Spark Structured Streaming by default, or with --once a plain loop without Spark. Killed
    at any point, the same command resumes where the store left off.

    A program with event rules (P2's reading: periodic, delete) runs them on the event log's
    clock: its timers fire between events, a link event is announced as it comes up and every
    --beacon seconds while it stays up, and --once runs the clock on to --until.
    """
    from netrules.pipeline import RunOptions, check_program, run_pipeline

    chosen = [s for s in (topology, capture_file, iface, events_src) if s is not None]
    if len(chosen) != 1:
        raise click.UsageError("give exactly one source: --simulate TOPO, --capture FILE, "
                               "--iface IF or --events DIR")
    if iface is not None and once:
        raise click.UsageError("--iface captures forever; it cannot be combined with --once")
    if until is not None and not once:
        raise click.UsageError("--until runs the clock on after the whole log: it needs --once")
    events_dir = events_src or events_dir
    try:
        prog = load_program_arg(program)
        plan = plan_program(prog)
    except NetrulesError as err:
        raise _click_error(err) from err
    db = _open_store(store)
    stop = None
    try:
        check_program(db, program, prog.source or str(prog))
        db.set_meta("events_dir", str(Path(events_dir).resolve()))
        progress = _Progress(enabled=not as_json)
        n_new, _graph = _write_source(
            topology=topology, scenario=scenario, seed=seed, fail_link=fail_link, at=at,
            random_failures=random_failures, tick=tick, capture_file=capture_file,
            events_dir=events_dir, store=db, progress=progress)
        if topology or capture_file:
            click.echo(f"event log {events_dir}: {n_new} new events", err=True)
        if iface is not None:
            import threading

            from netrules.eventlog import EventLog
            from netrules.pipeline.sources import follow_interface

            stop = threading.Event()
            follow_interface(iface, EventLog(events_dir), stop)
        opts = RunOptions(
            store=store, events_dir=events_dir, checkpoint=checkpoint, strategy=strategy,
            engine=engine, state=state, spark_master=spark_master, once=once,
            follow=bool(follow if follow is not None else iface is not None),
            timeout=timeout, batch_events=batch_events,
            max_files_per_trigger=max_files_per_trigger, trigger=trigger,
            max_derivations=max_derivations, link_relation=link_relation,
            route_relation=route_relation, reach_relation=reach_relation,
            loop_relation=loop_relation,
            pattern_relations=tuple(p for p in pattern_relations.split(",") if p),
            monitored=_monitor_pairs(monitor), alert_config=alert_config, webhook=webhook,
            strict=strict, until=until, beacon=beacon)
        summary = run_pipeline(
            plan, db, opts, on_batch=_batch_printer(quiet or as_json),
            on_bad_line=lambda msg: click.echo(f"warning: {msg}", err=True),
            on_progress=progress,
            on_ignored=lambda kind, where, why: click.echo(
                f"warning: {where}: {why}; events like it are counted in the batch stats "
                f"(ignored.{kind}), not applied (--strict stops instead)", err=True),
            on_compile=lambda msg: click.echo(msg, err=True))
        progress.close()
        active = db.alerts(active_only=True)
        if as_json:
            snap = db.snapshot()
            click.echo(json.dumps({
                "mode": summary.mode, "batches": summary.batches, "events": summary.events,
                "replayed": summary.replayed, "bad_lines": summary.bad_lines,
                "spark_jobs": summary.spark_jobs,
                "views": {r: snap.get(r, []) for r in sorted(plan.visible | _tables(plan))},
                **({"clock": summary.clock} if summary.clock is not None else {}),
                "active_alerts": [a.to_json() for a in active]}, default=str))
        else:
            clock = "" if summary.clock is None else f", clock at {summary.clock:g} s"
            click.echo(f"{summary.batches} batches, {summary.events} events applied "
                       f"({summary.mode}{clock}); {len(active)} active alerts; store {store}",
                       err=True)
    except NetrulesError as err:
        raise _click_error(err) from err
    except Exception as err:
        if type(err).__name__ == "StreamingQueryException":
            raise click.ClickException(f"the streaming query failed: {err}") from err
        raise
    finally:
        if stop is not None:
            stop.set()
        db.close()


def _tables(plan: Plan) -> set[str]:
    """The tables a program's event rules write (stored like views)."""
    return {r.head.relation for r in plan.reactive} - plan.events


@main.command()
@click.argument("atom")
@_store_opt
@settings.option("link_relation")
@_json_opt
def query(atom: str, store: str, link_relation: str, as_json: bool) -> None:
    """Facts in the store matching ATOM, e.g. 'reachable(@a,X)' or 'bestPath(@a,d,P,C)'."""
    from netrules.store import queries

    db = _open_store(store, read_only=True)
    try:
        parsed = parse_atom(atom)
        nodes = queries.known_nodes(db, link_relation)
        for t in parsed.args:  # NDlog reads capitalised names as variables
            if isinstance(t, ast.Var) and t.name in nodes:
                click.echo(f"note: {t.name} is a variable here; write the node as "
                           f"\"{t.name}\"", err=True)
        facts = queries.query(db, parsed, link_relation)
    except NetrulesError as err:
        raise _click_error(err) from err
    finally:
        db.close()
    if as_json:
        click.echo(json.dumps([[value_to_json(a) for a in f.args] for f in facts]))
        return
    for f in facts:
        click.echo(str(f))
    click.echo(f"{len(facts)} fact{'s' if len(facts) != 1 else ''}", err=True)


@main.command()
@click.argument("fact")
@_store_opt
@_json_opt
def why(fact: str, store: str, as_json: bool) -> None:
    """Why FACT holds: its derivation tree from the store, down to base facts."""
    from netrules.store import queries

    db = _open_store(store, read_only=True)
    try:
        atom = parse_atom(fact)
        if any(ast.variables_of(t) for t in atom.args):
            raise click.UsageError(f"{fact!r} has variables; `why` explains one ground fact "
                                   f"(find them with `netrules query`)")
        tree = queries.why(db, atom.ground())
    except NetrulesError as err:
        raise _click_error(err) from err
    finally:
        db.close()
    click.echo(json.dumps(tree.to_json()) if as_json else tree.render())


@main.command()
@click.argument("src", required=False)
@click.argument("dst", required=False)
@_store_opt
@settings.option("route_relation")
@_json_opt
def routes(src: str | None, dst: str | None, store: str, route_relation: str,
           as_json: bool) -> None:
    """Current routes (the route relation, bestPath by default), from SRC and to DST."""
    from netrules.store import queries

    db = _open_store(store, read_only=True)
    try:
        queries.check_relation_known(db, route_relation)
        where = {}
        for pos, node in ((0, src), (1, dst)):
            if node is not None:
                queries.check_node(db, node)
                where[pos] = node
        rows = db.read_view(route_relation, where=where or None)
    except NetrulesError as err:
        raise _click_error(err) from err
    finally:
        db.close()
    if as_json:
        click.echo(json.dumps([[value_to_json(a) for a in f.args] for f in rows]))
        return
    for f in rows:
        rest = " ".join(
            ("via " + " ".join(map(str, a))) if isinstance(a, tuple) else f"cost {a}"
            for a in f.args[2:])
        click.echo(f"{f.args[0]} -> {f.args[1]}  {rest}")
    click.echo(f"{len(rows)} route{'s' if len(rows) != 1 else ''}", err=True)


@main.command()
@click.argument("src")
@click.argument("dst")
@_store_opt
@settings.option("route_relation")
@settings.option("link_relation")
@_json_opt
def traceroute(src: str, dst: str, store: str, route_relation: str, link_relation: str,
               as_json: bool) -> None:
    """Follow the route from SRC to DST hop by hop: each hop's next hop, the cost so far
    and the rule and fact that chose it."""
    from netrules.store import queries

    db = _open_store(store, read_only=True)
    try:
        trace = queries.traceroute(db, src, dst, route_relation, link_relation)
    except NetrulesError as err:
        raise _click_error(err) from err
    finally:
        db.close()
    if as_json:
        click.echo(json.dumps({"src": src, "dst": dst, "complete": trace.complete,
                               "reason": trace.reason,
                               "hops": [h.to_json() for h in trace.hops]}))
    else:
        click.echo(f"traceroute {src} -> {dst} along {route_relation}")
        for h in trace.hops:
            cost = "" if h.cost_so_far is None else f"cost {h.cost_so_far:<4}"
            click.echo(f"{h.index:>3}  {h.node} -> {h.next_hop}  {cost} "
                       f"because [{h.rule or '?'}] {h.route}")
        if trace.complete:
            click.echo(f"  reached {dst} in {len(trace.hops)} hops")
    if not trace.complete:
        raise click.ClickException(f"{trace.reason}\nHint: `netrules alerts --active` lists "
                                   f"the routes that were lost")


@main.command()
@click.option("--before", type=int, help="Batch id: the state after this batch ...")
@click.option("--after", type=int, help="... compared with the state after this batch.")
@click.option("--event", "event_id", help="Diff around the batch that applied this event.")
@click.option("--relation", default=None,
              help="Pair relation to compare (default: reachable if stored, else bestPath).")
@_store_opt
@_json_opt
def diff(before: int | None, after: int | None, event_id: str | None, relation: str | None,
         store: str, as_json: bool) -> None:
    """Reachability pairs lost and gained between two batches, from the change log."""
    from netrules.store import queries

    if event_id is None and (before is None or after is None):
        raise click.UsageError("give --before BATCH --after BATCH, or --event ID")
    db = _open_store(store, read_only=True)
    try:
        if event_id is not None:
            after = queries.batch_of_event(db, event_id)
            before = after - 1
        assert before is not None and after is not None
        plan = queries.stored_plan(db)
        rels = set(db.relations()) | (set(plan.arity) if plan else set())
        relation = relation or next((r for r in ("reachable", "bestPath") if r in rels),
                                    "reachable")
        lost, gained = queries.reach_diff(db, before, after, relation)
    except NetrulesError as err:
        raise _click_error(err) from err
    finally:
        db.close()
    if as_json:
        click.echo(json.dumps({"before": before, "after": after, "relation": relation,
                               "lost": [list(map(value_to_json, p)) for p in lost],
                               "gained": [list(map(value_to_json, p)) for p in gained]}))
        return
    click.echo(f"{relation} pairs, after batch {before} -> after batch {after}: "
               f"{len(lost)} lost, {len(gained)} gained")
    for mark, pairs in (("-", lost), ("+", gained)):
        for s, d in pairs:
            click.echo(f"{mark} {s} -> {d}")


@main.command(name="why-not")
@click.argument("atom")
@_store_opt
@settings.option("link_relation")
@_json_opt
def why_not(atom: str, store: str, link_relation: str, as_json: bool) -> None:
    """Why ATOM's pair has no fact, e.g. 'bestPath("New York","Seattle",P,C)' or
    'reachable(a,d)': the last fact it had, the batch and base facts whose deletion took it,
    and why each neighbour of the source cannot offer one."""
    from netrules.store.whynot import why_not as explain

    db = _open_store(store, read_only=True)
    try:
        answer = explain(db, parse_atom(atom), link_relation)
    except NetrulesError as err:
        raise _click_error(err) from err
    finally:
        db.close()
    click.echo(json.dumps(answer.to_json()) if as_json else answer.render())


@main.command()
@click.option("--active", is_flag=True, help="Only incidents (and alerts) still active.")
@click.option("--limit", type=int, default=None, help="At most N alerts, newest first.")
@_store_opt
@_json_opt
def alerts(active: bool, limit: int | None, store: str, as_json: bool) -> None:
    """Incidents in the store, newest first, each with the alerts it groups."""
    from netrules.store.incidents import group_incidents

    db = _open_store(store, read_only=True)
    try:
        rows = db.alerts(active_only=active, limit=limit)
    except NetrulesError as err:
        raise _click_error(err) from err
    finally:
        db.close()
    incidents = group_incidents(rows)
    if as_json:
        click.echo(json.dumps({"incidents": [i.to_json() for i in incidents]}))
        return
    for inc in incidents:
        click.echo(f"[batch {inc.start_batch}] INCIDENT {inc.title()}")
        for a in inc.alerts:
            state = ("ACTIVE " if a.state == "active"
                     else f"cleared in batch {a.cleared_batch}: ")
            click.echo(f"    [batch {a.raised_batch}] {a.severity:<8} {state}{a.message}")
    click.echo(f"{len(incidents)} incident{'s' if len(incidents) != 1 else ''}, "
               f"{len(rows)} alert{'s' if len(rows) != 1 else ''}", err=True)


def _register_dashboard() -> None:
    """The one ``dashboard`` command lives with the dashboard (its tests start it the same way)."""
    from dashboard.commands import dashboard

    main.add_command(dashboard, "dashboard")


_register_dashboard()


@main.command()
@click.option("--dir", "directory", default="netrules-demo", show_default=True,
              type=click.Path(file_okay=False), help="Where the demo writes its files.")
@click.option("--once/--stream", default=True, show_default=True,
              help="Apply the log without Spark (fast), or with Spark Structured Streaming.")
@click.option("--keep", is_flag=True, help="Keep the previous demo's store and log.")
def demo(directory: str, once: bool, keep: bool) -> None:
    """Abilene under path-vector routing: a link fails (reroute), a second one cuts Seattle
    off (routes lost, alerts raised), then both recover (alerts cleared)."""
    from netrules.pipeline import demo as demo_mod

    try:
        demo_mod.run_demo(directory, once=once, keep=keep, echo=click.echo,
                          on_batch=_batch_printer(False, show=4))
    except NetrulesError as err:
        raise _click_error(err) from err


if __name__ == "__main__":  # python -m netrules.cli (the crash tests run it this way)
    main()
