"""Every tunable of the pipeline as data: one ``Setting(name, default, help)`` per knob.

The CLI builds its options from this table (:func:`option`), each also read from the
environment as ``NETRULES_<NAME>`` (so ``NETRULES_STORE`` reaches the dashboard), and the
README's settings table is generated from it; a knob that is not here does not exist.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

__all__ = ["Setting", "SETTINGS", "get", "option", "envvar", "markdown_table"]


@dataclass(frozen=True)
class Setting:
    """One knob: its name (``events_dir``), default, and a help line for --help and docs."""

    name: str
    default: Any
    help: str

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


SETTINGS: tuple[Setting, ...] = (
    Setting("store", "netrules.db",
            "Store URL: a SQLite path, sqlite:///relative or sqlite:////absolute, or "
            "postgresql://user@host/db."),
    Setting("events_dir", "netrules-events",
            "Event-log directory: sources write segments here, the pipeline reads them."),
    Setting("checkpoint", None,
            "Spark checkpoint directory (default: <events-dir>.checkpoint)."),
    Setting("spark_master", "local[2]", "Spark master URL for the streaming pipeline."),
    Setting("trigger", 1.0, "Streaming trigger interval in seconds (when following a log)."),
    Setting("max_files_per_trigger", 1,
            "Event-log segments per streaming micro-batch (one segment is one collector tick)."),
    Setting("batch_events", 0,
            "--once: at most this many events per batch (a batch never spans two segments); "
            "0 applies each segment whole, so a topology load is one materialisation."),
    Setting("strategy", "auto", "Maintenance strategy: auto (the columnar engine; per-fact "
            "psn or a rebuild past the crossover where it does not apply), columnar, psn, dred, "
            "fbf, counting or rematerialize; per-view overrides after commas, e.g. "
            "auto,bestPath=dred (psn, dred or fbf)."),
    Setting("engine", "reference",
            "Who maintains the views: reference (in-process) or spark (views mirrored in Spark)."),
    Setting("state", "driver",
            "Where --engine spark keeps the maintained views: driver (mirrored in Spark, fastest "
            "while they fit in the driver) or spark (in Spark executors, region by region)."),
    Setting("max_derivations", 20_000,
            "Derivations written per batch at most (the store keeps one support per fact)."),
    Setting("link_relation", "link",
            "Base relation holding links link(@S,D,C); its changes update link states."),
    Setting("route_relation", "bestPath",
            "Route relation: a vanished (src,dst) raises route_lost."),
    Setting("reach_relation", "reachable",
            "Reachability relation: a vanished monitored pair raises reachability_lost."),
    Setting("loop_relation", "loop", "Loop relation: every new fact raises routing_loop."),
    Setting("pattern_relations", "suspect,detectable",
            "Comma-separated pattern relations: every new fact raises pattern_matched."),
    Setting("alert_config", None,
            "JSON file with an AlertConfig mapping (overrides the relation settings)."),
    Setting("webhook", None, "POST each batch's raised/cleared alerts as JSON to this URL."),
)

_BY_NAME = {s.name: s for s in SETTINGS}


def get(name: str) -> Setting:
    """The setting called ``name`` (KeyError names the known ones)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"no setting {name!r}; known: {', '.join(_BY_NAME)}") from None


def envvar(name: str) -> str:
    """The environment variable that overrides setting ``name``."""
    return "NETRULES_" + get(name).name.upper()


def option(name: str, *decls: str, **kwargs: Any) -> Callable[[Callable], Callable]:
    """A click option for setting ``name``: default, help and env var come from the table."""
    s = get(name)
    kwargs.setdefault("default", s.default)
    kwargs.setdefault("help", s.help)
    kwargs.setdefault("envvar", envvar(name))
    kwargs.setdefault("show_default", s.default is not None)
    if "type" not in kwargs and s.default is not None and not isinstance(s.default, str):
        kwargs["type"] = type(s.default)
    return click.option(*(decls or (s.flag,)), name, **kwargs)


def markdown_table() -> str:
    """The settings as a Markdown table (the README's section is this text)."""
    rows = ["| setting | option | env | default | meaning |", "|---|---|---|---|---|"]
    for s in SETTINGS:
        default = "" if s.default is None else f"`{s.default}`"
        rows.append(f"| {s.name} | `{s.flag}` | `{envvar(s.name)}` | {default} | {s.help} |")
    return "\n".join(rows)
