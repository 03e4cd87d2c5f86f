"""``netrules dashboard``: start the Streamlit dashboard against a store.

Binds 127.0.0.1 unless ``--host`` says otherwise, because the dashboard has no authentication
and shows the whole network's state; exposing it is a decision the operator makes explicitly.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click

from netrules import settings
from netrules.errors import NetrulesError
from netrules.store import open_store

__all__ = ["APP", "SERVE", "streamlit_command", "dashboard", "serve"]

APP = Path(__file__).resolve().parent / "app.py"
#: ``streamlit run`` with the app's heavy imports done before the first visit.
SERVE = Path(__file__).resolve().parent / "serve.py"
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def streamlit_command(host: str = "127.0.0.1", port: int = 8501) -> list[str]:
    """The exact ``streamlit run`` command line (tests start the dashboard with it too).

    Usage statistics off and the toolbar minimal (no Deploy button): an operator's screen
    phones nothing home and offers nothing to click that is not netrules'. No file watcher:
    a served dashboard is not being edited, and watching every imported module costs start-up
    time and inotify handles."""
    return [sys.executable, str(SERVE), str(APP),
            "--server.address", host, "--server.port", str(port),
            "--server.headless", "true", "--browser.gatherUsageStats", "false",
            "--client.toolbarMode", "minimal", "--server.fileWatcherType", "none",
            "--server.runOnSave", "false"]


@click.command("dashboard")
@settings.option("store")
@click.option("--port", type=click.IntRange(1, 65535), default=8501, show_default=True)
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind; anything but loopback exposes the dashboard, which has "
                   "no authentication.")
def dashboard(store: str, port: int, host: str) -> None:
    """Serve the live dashboard for STORE on http://HOST:PORT (reads the store only)."""
    try:
        open_store(store, read_only=True).close()
    except NetrulesError as err:
        raise click.ClickException(
            f"{err}\nHint: create a store with `netrules demo` or `netrules run PROGRAM ...`, "
            "or point --store at one") from err
    if host not in _LOOPBACK:
        click.echo(f"warning: binding {host}: the dashboard has no authentication", err=True)
    env = {**os.environ, "NETRULES_STORE": store}
    click.echo(f"netrules dashboard: http://{host}:{port}  (store {store}; Ctrl-C stops it)",
               err=True)
    sys.exit(serve(streamlit_command(host, port), env))


def serve(cmd: list[str], env: dict[str, str]) -> int:
    """Run the server as this process (POSIX ``exec``): a supervisor's SIGTERM, or a
    ``kill`` of the pid it started, then stops the server itself. As a child it outlived a
    terminated ``netrules dashboard`` and kept the port (seen in an operator's check,
    2026-11-28). Elsewhere the server runs as a child and Ctrl-C ends both."""
    if os.name == "posix":
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(cmd[0], cmd, env)  # does not return
    try:
        return subprocess.call(cmd, env=env)
    except KeyboardInterrupt:
        return 0
