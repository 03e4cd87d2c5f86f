"""``replay`` and ``capture`` click commands; the lead registers them in the ``netrules`` group.

Events go to stdout (JSON lines with ``--json``, for piping into the event log), everything
about the run (progress, the report) to stderr so it never mixes with the events.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterable

import click

from netrules.errors import CollectorError
from netrules.eventlog.schema import Event

__all__ = ["replay_cmd", "capture_cmd"]


def _readable(e: Event) -> str:
    return f"{e.time:.6f} {e.op} {e.fact}  [{e.kind}] {e.id}"


def _emit(events: Iterable[Event], as_json: bool) -> None:
    for e in events:
        click.echo(e.to_line() if as_json else _readable(e))


def _quiet_scapy() -> None:
    """Scapy logs a warning per damaged record; the report lists them once, with numbers."""
    logging.getLogger("scapy.runtime").setLevel(logging.ERROR)


@click.command("replay")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="One JSON event per line.")
@click.option("--source", default=None, help="Name of the capture point (default: file stem).")
def replay_cmd(file: str, as_json: bool, source: str | None) -> None:
    """Replay a pcap/pcapng capture as events; exit 1 only when nothing could be read."""
    from collectors.pcap import replay

    _quiet_scapy()
    started = time.monotonic()

    def progress(done: int, total: int) -> None:
        if time.monotonic() - started >= 1.0 and total:
            click.echo(f"\r{done / 2**20:,.0f} / {total / 2**20:,.0f} MiB "
                       f"({100 * done / total:.0f}%)", err=True, nl=False)

    try:
        with replay(file, source=source, progress=progress) as run:
            _emit(run, as_json)
    except CollectorError as err:
        raise click.ClickException(str(err)) from err
    if time.monotonic() - started >= 1.0:
        click.echo("", err=True)  # end the progress line
    click.echo(run.report.summary(), err=True)


@click.command("capture")
@click.option("--iface", required=True, help="Interface to capture on (needs CAP_NET_RAW).")
@click.option("--count", type=click.IntRange(min=1), default=None, help="Stop after N packets.")
@click.option("--timeout", type=click.FloatRange(min=0), default=None, help="Stop after S s.")
@click.option("--json", "as_json", is_flag=True, help="One JSON event per line.")
def capture_cmd(iface: str, count: int | None, timeout: float | None, as_json: bool) -> None:
    """Capture live from an interface and print events as they happen."""
    from collectors.live import capture

    try:
        for e in capture(iface, count=count, timeout=timeout):
            click.echo(e.to_line() if as_json else _readable(e))
            sys.stdout.flush()
    except CollectorError as err:
        raise click.ClickException(str(err)) from err
    except KeyboardInterrupt:
        pass
