"""End to end in a real browser: the dashboard follows the store live.

Starts ``netrules dashboard``'s exact command line on 127.0.0.1 against a store with every
link up, opens it in headless Debian Chromium, then fails a link and waits, bounded, for the
lost-route alert and the red link to appear without any reload. The store is written by the
real pipeline (``netrules run path_vector --simulate line:4 --once``, no Spark) when that command
exists, else by the test fixture that mimics its batches. Screenshots before and after go to
pytest's tmp_path and to tests/artifacts/ (gitignored).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from dashboard.commands import streamlit_command
from tests.dashboard.conftest import Net


class Pipeline:
    """The real ``netrules run`` on a simulated line n0-n1-n2-n3; ``fail`` reruns it with
    ``--fail-link n1 n2`` (the event log is idempotent, so only the failure is new)."""

    alert = "route lost: "
    down_text = "n1 → n2 down"
    broken_text = "n0 → n1 → n2"

    def __init__(self, tmp: Path) -> None:
        self.tmp, self.url = tmp, str(tmp / "netrules.db")

    def _run(self, *extra: str) -> None:
        subprocess.run([sys.executable, "-m", "netrules.cli", "run", "path_vector",
                        "--simulate", "line:4", "--once", "--store", self.url,
                        "--events-dir", str(self.tmp / "events"), *extra],
                       cwd=self.tmp, check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        self._run()

    def fail(self) -> None:
        self._run("--fail-link", "n1", "n2", "--at", "1.0")


class Mimic:
    """The fixture's six-node network written batch by batch, failing e-f."""

    alert = "route lost: f has no bestPath to e"
    down_text = "e → f down"
    broken_text = "a → b → d → e → f"

    def __init__(self, tmp: Path) -> None:
        self.net = Net(str(tmp / "netrules.db"))
        self.url = self.net.url

    def start(self) -> None:
        self.net.step()

    def fail(self) -> None:
        self.net.step(down=(("e", "f"),))


def has_run_command() -> bool:
    from netrules.cli import main

    return "run" in main.commands

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
DOWN_RGB = "rgb(214, 39, 40)"  # graph.DOWN

if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
    pytest.skip(f"browser test needs Debian's {CHROMIUM} and {CHROMEDRIVER} "
                "(apt-get install chromium chromium-driver)", allow_module_level=True)
webdriver = pytest.importorskip("selenium.webdriver", reason="browser test needs selenium")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what: str, check: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Pipeline | Mimic]]:
    """A store with every link up and the dashboard serving it."""
    net = Pipeline(tmp_path) if has_run_command() else Mimic(tmp_path)
    net.start()
    port = free_port()
    log = (tmp_path / "streamlit.log").open("w")
    proc = subprocess.Popen(streamlit_command("127.0.0.1", port), cwd=tmp_path,
                            env={**os.environ, "NETRULES_STORE": net.url},
                            stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"

    def healthy() -> bool:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=1) as r:
                return r.status == 200
        except OSError:
            return proc.poll() is not None  # died: stop waiting, fail below

    try:
        wait_for("the dashboard to start", healthy, 30)
        assert proc.poll() is None, (tmp_path / "streamlit.log").read_text()
        yield url, net
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[object]:
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--window-size=1400,1700",
                 f"--user-data-dir={tmp_path / 'chromium-profile'}"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(options=opts, service=Service(CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()


def red_links(driver) -> int:
    """How many plotly line traces on the page are drawn in the 'link down' red."""
    strokes = driver.execute_script(
        "return Array.from(document.querySelectorAll('.js-plotly-plot path.js-line'))"
        ".map(p => p.style.stroke)")
    return sum(s == DOWN_RGB for s in strokes)


def body_text(driver) -> str:
    return driver.execute_script("return document.body.innerText")


def shoot(driver, tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    driver.save_screenshot(str(path))
    ARTIFACTS.mkdir(exist_ok=True)
    ignore = ARTIFACTS / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*\n")
    shutil.copy(path, ARTIFACTS / name)
    return path


def test_live_page_shows_link_failure_and_lost_route(served, browser, tmp_path: Path) -> None:
    url, net = served
    browser.get(url)
    wait_for("the topology map", lambda: "Topology" in body_text(browser)
             and browser.execute_script(
                 "return document.querySelectorAll('.js-plotly-plot path.js-line').length") > 0,
             45)
    wait_for("the all-up state", lambda: "All links are up." in body_text(browser), 15)
    assert net.alert not in body_text(browser)
    assert red_links(browser) == 0
    shoot(browser, tmp_path, "dashboard_before.png")

    net.fail()

    wait_for("the lost-route alert", lambda: net.alert in body_text(browser), 30)
    wait_for("the failed link drawn red", lambda: red_links(browser) > 0, 15)
    wait_for("the broken-routes table", lambda: net.broken_text in body_text(browser), 15)
    assert net.down_text in body_text(browser)
    shoot(browser, tmp_path, "dashboard_after.png")
