"""End to end in a real browser: the operator's view of the demo's Seattle outage.

Runs the demo's own scenario (Abilene under path_vector) through the real pipeline
(``netrules run --once``, no Spark) in three steps against one store: every link up, then
Seattle cut off (Seattle–Denver, then Seattle–Sunnyvale), then both links back. The dashboard is
started with ``netrules dashboard``'s exact command line on 127.0.0.1 and read in headless
Debian Chromium, which follows the store live without a reload. Screenshots go to pytest's
tmp_path and to tests/artifacts/ (for CI to keep), with the measured first paint and section
switch times (``timings.json``): measured and reported, never asserted.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from dashboard.commands import streamlit_command
from netrules.pipeline.demo import DEMO_SCENARIO

ROOT = Path(__file__).resolve().parents[2]
#: Subprocesses run this worktree's code, whatever netrules is installed.
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}


class Demo:
    """The demo's scenario applied step by step: rerunning ``netrules run`` with a longer
    scenario appends only the new events (the event log is idempotent)."""

    def __init__(self, tmp: Path) -> None:
        self.tmp, self.url = tmp, str(tmp / "netrules.db")
        self.lines = [ln for ln in DEMO_SCENARIO.splitlines() if ln.startswith("at ")]

    def _run(self, steps: int) -> None:
        (self.tmp / "demo.scenario").write_text("# the demo\n" + "".join(
            ln + "\n" for ln in self.lines[:steps]))
        subprocess.run([sys.executable, "-m", "netrules.cli", "run", "path_vector",
                        "--simulate", "abilene", "--scenario", str(self.tmp / "demo.scenario"),
                        "--once", "-q", "--store", self.url,
                        "--events-dir", str(self.tmp / "events")],
                       cwd=self.tmp, env=ENV, check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        self._run(0)

    def cut_seattle(self) -> None:
        self._run(2)

    def recover(self) -> None:
        self._run(4)


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


def wait_for(what: str, check: Callable[[], bool], timeout: float) -> float:
    """Poll ``check`` until true; the seconds it took (timeouts bound a hang, they are not
    performance thresholds)."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        if check():
            return time.perf_counter() - t0
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Demo]]:
    """A store with every link up and the dashboard serving it."""
    net = Demo(tmp_path)
    net.start()
    port = free_port()
    log = (tmp_path / "streamlit.log").open("w")
    proc = subprocess.Popen(streamlit_command("127.0.0.1", port), cwd=tmp_path,
                            env={**ENV, "NETRULES_STORE": net.url},
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


#: The topology map's link segments (the legend's sample lines sit outside the map).
MAP_LINES = "svg.netmap line"


def red_links(driver) -> int:
    """How many link segments the map draws in the 'link down' red, as the browser paints
    them (computed stroke)."""
    strokes = driver.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0]))"
        ".map(l => getComputedStyle(l).stroke)", MAP_LINES)
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


def legend(driver) -> list[str]:
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('.netmap-legend .legendtext'))"
        ".map(t => t.textContent)")


def trace_y(driver, name: str) -> list[float]:
    """The y values of the plotly trace called ``name`` (the chart's own data, not pixels)."""
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('.js-plotly-plot')).flatMap(g => "
        "(g.data || []).filter(t => t.name === arguments[0]).map(t => Array.from(t.y)))"
        ".flat()", name)


def paint_breakdown(driver) -> dict[str, float]:
    """Where the first paint went, by the browser's own clock (from navigation start, so
    without WebDriver's overhead): the HTML and main bundle parsed, the page loaded, the map
    drawn (now), and how much script the page had fetched by then."""
    return driver.execute_script("""
        const nav = performance.getEntriesByType('navigation')[0];
        const js = performance.getEntriesByType('resource').filter(r => /[.]js$/.test(r.name));
        const s = ms => Math.round(ms) / 1000;
        return {dom_content_loaded_s: s(nav.domContentLoadedEventEnd),
                load_event_s: s(nav.loadEventEnd), map_drawn_s: s(performance.now()),
                script_files: js.length,
                script_mb: Math.round(js.reduce((n, r) => n + r.decodedBodySize, 0) / 1e4) / 100};
    """)


def switch(driver, section: str, ready: str) -> float:
    """Click a section in the sidebar; seconds until ``ready`` text is on the page."""
    from selenium.webdriver.common.by import By

    label = driver.find_element(
        By.XPATH, f"//section[@data-testid='stSidebar']//label[.//p[text()='{section}']]")
    t0 = time.perf_counter()
    label.click()
    wait_for(f"the {section} section", lambda: ready in body_text(driver), 30)
    return time.perf_counter() - t0


BANNER = "Incident · major: Seattle–Sunnyvale down: 20 routes lost"
ABILENE_OTHERS = ("Atlanta", "Chicago", "Denver", "Houston", "Indianapolis", "Kansas City",
                  "Los Angeles", "New York", "Sunnyvale", "Washington DC")


def test_operator_watches_seattle_cut_off_and_come_back(served, browser, tmp_path: Path) -> None:
    url, net = served
    timings: dict[str, object] = {}
    t0 = time.perf_counter()
    browser.get(url)
    timings["page_load_s"] = round(time.perf_counter() - t0, 2)  # HTML and script bundle
    wait_for("the sidebar", lambda: "Refresh now" in body_text(browser), 60)
    timings["first_script_output_s"] = round(time.perf_counter() - t0, 2)
    wait_for("the topology map", lambda: "Routes they broke" in body_text(browser)
             and browser.execute_script(
                 "return document.querySelectorAll(arguments[0]).length", MAP_LINES) > 0, 60)
    timings["first_paint_s"] = round(time.perf_counter() - t0, 2)
    timings["first_paint_breakdown"] = paint_breakdown(browser)
    wait_for("the all-up state", lambda: "All links are up." in body_text(browser), 15)
    assert "Incident ·" not in body_text(browser) and red_links(browser) == 0
    shoot(browser, tmp_path, "dashboard_before.png")

    net.cut_seattle()

    wait_for("the incident banner", lambda: BANNER in body_text(browser), 30)
    wait_for("20 lost routes", lambda: "20 lost, " in body_text(browser), 15)
    # the table under the caption names the failed link each route went over
    wait_for("the broken routes' table", lambda: "Seattle→" in body_text(browser), 15)
    text = body_text(browser)
    assert text.count("Incident ·") == 1, text  # one cut, one incident, not 20 banners
    assert "Seattle isolated" in text
    assert "route lost (20)" in legend(browser)
    assert red_links(browser) == 2  # Seattle-Denver and Seattle-Sunnyvale, nothing else
    shoot(browser, tmp_path, "dashboard_seattle_cut.png")

    switches: dict[str, float] = {}
    switches["Alerts"] = switch(browser, "Alerts", "Every alert")
    text = body_text(browser)  # the lost routes by name: every pair Seattle was part of
    affected = next(ln for ln in text.splitlines() if ln.startswith("Affected: "))
    assert set(affected.removeprefix("Affected: ").split(", ")) == {
        r for n in ABILENE_OTHERS for r in (f"{n} → Seattle", f"Seattle → {n}")}
    assert "20 alerts shown, 20 active" in text
    switches["Reachability"] = switch(browser, "Reachability", "Can one node reach")
    # a path_vector store has no reachable view: the page opens on bestPath, not on an error
    text = body_text(browser)
    assert "unknown relation" not in text and "Can one node reach another? (bestPath)" in text
    switches["Routes"] = switch(browser, "Routes", "Why this route")
    switches["Timeline"] = switch(browser, "Timeline", "Changes of batch")
    switches["Topology"] = switch(browser, "Topology", "Routes they broke")
    timings["switch_s"] = {k: round(v, 2) for k, v in switches.items()}

    query = urllib.parse.urlencode({"section": "Routes", "src": "New York", "dst": "Seattle"})
    browser.get(f"{url}/?{query}")
    wait_for("the why-not answer", lambda: "Seattle is cut off" in body_text(browser), 45)
    text = body_text(browser)
    assert "No route from New York to Seattle" in text
    assert "Last held: bestPath(@\"New York\",\"Seattle\"" in text
    assert "removed by batch 2" in text
    assert "Denver–Seattle (down since batch 1)" in text
    assert "Seattle–Sunnyvale (down since batch 2)" in text
    assert "Chicago: Chicago has no bestPath to Seattle either" in text
    shoot(browser, tmp_path, "dashboard_why_not.png")

    net.recover()

    browser.get(f"{url}/?section=Timeline")
    wait_for("the recovery", lambda: trace_y(browser, "links down") == [0, 1, 2, 1, 0], 45)
    wait_for("the banner to clear", lambda: "Incident ·" not in body_text(browser), 15)
    assert trace_y(browser, "active incidents") == [0, 0, 1, 0, 0]
    shoot(browser, tmp_path, "dashboard_timeline.png")

    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "timings.json").write_text(json.dumps(timings, indent=2) + "\n")
    print(f"\ndashboard timings (measured, not asserted): {json.dumps(timings)}")
