"""``netrules simulate``: run a failure scenario on a topology, print or log its events.

Kept apart from the simulator so the library has no click dependency in its import path and
the lead can register the command into the CLI group (``cli.add_command(simulate)``).
"""

from __future__ import annotations

import click

from collectors.scenario import Scenario
from collectors.simulate import run
from netrules.errors import NetrulesError
from netrules.eventlog.log import EventLog
from topologies.load import load_topology

__all__ = ["simulate"]


@click.command("simulate")
@click.argument("topology")
@click.option("--scenario", "scenario_file", type=click.Path(dir_okay=False),
              help="Scenario file (see collectors/scenario.py for the format).")
@click.option("--seed", type=int, default=None,
              help="Random seed (overrides a 'seed' line in the scenario file; default 0).")
@click.option("--fail-link", nargs=2, multiple=True, metavar="A B",
              help="Fail link A-B (both directions) at time --at. Repeatable.")
@click.option("--fail-node", multiple=True, metavar="N",
              help="Fail node N (all its links) at time --at. Repeatable.")
@click.option("--at", "at", type=float, default=1.0, show_default=True,
              help="Time of the --fail-link/--fail-node failures.")
@click.option("--random-failures", metavar="MTBF,MTTR,UNTIL",
              help="Random link failures: mean time between failures, mean time to repair, end.")
@click.option("--name", default=None,
              help="Scenario name in event ids sim:NAME:SEQ "
              "(default: scenario file stem, or 'cli').")
@click.option("--json", "as_json", is_flag=True, help="Print events as JSON lines.")
@click.option("--log", "log_dir", type=click.Path(file_okay=False),
              help="Append the events to this event log directory instead of printing them.")
def simulate(topology: str, scenario_file: str | None, seed: int | None,
             fail_link: tuple[tuple[str, str], ...], fail_node: tuple[str, ...], at: float,
             random_failures: str | None, name: str | None, as_json: bool,
             log_dir: str | None) -> None:
    """Simulate failures on TOPOLOGY and emit link events.

    TOPOLOGY is a .gml/.json/.txt/.edges file, topohub:<group/name> (e.g.
    topohub:backbone/americas), a generator (ring:6, grid:4x4, fattree:4, waxman:50:seed=1,
    ba:100:2:seed=1, line:74) or a bundled name (abilene, geant, nsfnet).
    """
    try:
        graph = load_topology(topology)
        base = Scenario.load(scenario_file, name=name) if scenario_file else None
        scenario = Scenario.from_flags(
            fail_links=fail_link, fail_nodes=fail_node, random_failures=random_failures,
            seed=seed, at=at, name=name or "cli", base=base,
        )
        result = run(graph, scenario)
    except NetrulesError as err:
        raise click.ClickException(err.render()) from err

    if log_dir:
        path = EventLog(log_dir).append(result.events)
        click.echo(f"appended {len(result.events)} events to {path}", err=True)
    else:
        for ev in result.events:
            if as_json:
                click.echo(ev.to_line())
            else:
                step = ev.detail.get("step", "")
                click.echo(f"{ev.time:>10g} {ev.op}{ev.fact}  {ev.kind}  # {step}")
    dropped = ", ".join(f"{k}={v}" for k, v in sorted(result.dropped.items()))
    click.echo(
        f"{graph.graph.get('name', topology)}: {graph.number_of_nodes()} nodes, "
        f"{graph.number_of_edges()} links, {len(result.events)} events"
        + (f" (dropped: {dropped})" if dropped else ""),
        err=True,
    )
