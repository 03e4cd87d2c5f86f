"""The ``netrules`` command line: a thin click group over the public API.

Every command that reads input reports bad input as ``file:line:col: error[CODE]: ...`` with a
caret line and exits with status 1; ``--json`` makes output machine-readable.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from netrules import programs
from netrules.errors import NetrulesError
from netrules.facts import Fact, value_to_json
from netrules.lang import ast, parse_facts, parse_program, parse_updates
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
def main() -> None:
    """netrules: a rule-based network monitor. NDlog views over your network, kept exact as
    links fail and recover."""


@main.command()
@click.argument("program")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
def check(program: str, as_json: bool) -> None:
    """Parse and plan PROGRAM (a file or a shipped program name); print strata and localized
    rules, or every error with its location (exit status 1)."""
    try:
        plan = plan_program(load_program_arg(program))
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


def _read_facts(path: str | None) -> list[Fact]:
    if path is None:
        return []
    return parse_facts(Path(path).read_text(encoding="utf-8"), path)


def _check_relations(plan: Plan, facts: list[Fact], where: str) -> None:
    from netrules.errors import FactsError

    for f in facts:
        if f.relation in plan.derived:
            raise FactsError(f"{where}: {f} asserts a derived relation; only base relations "
                             f"({', '.join(sorted(plan.base))}) take facts")
        want = plan.arity.get(f.relation)
        if want is not None and want != len(f.args):
            raise FactsError(f"{where}: {f} has {len(f.args)} arguments; {f.relation} takes "
                             f"{want}")


@main.command(name="eval")
@click.argument("program")
@click.option("--facts", "facts_path", type=click.Path(exists=True, dir_okay=False),
              help="Ground facts, one per line: link(@a,b,1).")
@click.option("--updates", "updates_path", type=click.Path(exists=True, dir_okay=False),
              help="Update batches: lines +fact. / -fact., batches separated by ---.")
@click.option("--engine", type=click.Choice(["reference", "spark"]), default="reference",
              show_default=True, help="Who computes the views.")
@click.option("--strategy", default=None, help="Maintenance strategy (spark engine).")
@click.option("--shuffle", type=int, default=None,
              help="Deliver each batch's updates in a random order from this seed.")
@click.option("--json", "as_json", is_flag=True, help="Print views as JSON.")
def eval_cmd(program: str, facts_path: str | None, updates_path: str | None, engine: str,
             strategy: str | None, shuffle: int | None, as_json: bool) -> None:
    """Evaluate PROGRAM over FACTS and print every derived relation. With --updates, apply
    each batch and print the views after it (JSON: a list, one object per batch)."""
    from netrules.engine.runner import run_batches

    try:
        prog = load_program_arg(program)
        plan = plan_program(prog)
        facts = _read_facts(facts_path)
        _check_relations(plan, facts, facts_path or "<facts>")
        batches = None
        if updates_path:
            batches = parse_updates(Path(updates_path).read_text(encoding="utf-8"),
                                    updates_path)
            for b in batches:
                _check_relations(plan, [f for _, f in b], updates_path)
        results = run_batches(plan, facts, batches, engine=engine, strategy=strategy,
                              shuffle=shuffle)
    except NetrulesError as err:
        _fail(err)
        return
    relations = plan.visible
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
