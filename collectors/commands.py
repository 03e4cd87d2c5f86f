"""``replay`` and ``capture`` click commands; the lead registers them in the ``netrules`` group.

Events go to stdout (JSON lines with ``--json``, for piping into the event log), everything
about the run (progress, the report) to stderr so it never mixes with the events.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable
from typing import Any

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


class _ByteProgress:
    """A tqdm bar over the bytes of the capture, on stderr so it never mixes with the events.

    It appears only once a replay has taken a second (a small capture prints nothing, not a
    stray ``0 / 0 MiB``) and only on a terminal; tqdm erases it when the replay ends.
    """

    def __init__(self) -> None:
        self._bar: Any = None

    def update(self, done: int, total: int) -> None:
        if total <= 0:
            return
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024,
                             desc="replaying", delay=1.0, leave=False, file=sys.stderr,
                             disable=None)
        self._bar.update(done - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


@click.command("replay")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="One JSON event per line.")
@click.option("--source", default=None, help="Name of the capture point (default: file stem).")
def replay_cmd(file: str, as_json: bool, source: str | None) -> None:
    """Replay a pcap/pcapng capture as events; exit 1 only when nothing could be read."""
    from collectors.pcap import replay

    _quiet_scapy()
    bar = _ByteProgress()
    try:
        with replay(file, source=source, progress=bar.update) as run:
            _emit(run, as_json)
    except CollectorError as err:
        raise click.ClickException(str(err)) from err
    finally:
        bar.close()
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
