"""``streamlit run`` for the dashboard, with the one-off work of a first visit done at start-up.

Streamlit runs the app script only when a browser connects, so the first visitor would wait for
everything a process does once: importing pandas, plotly, networkx and the app's own modules,
plotly loading a validator module per attribute on its first figure (the timeline's),
Streamlit compiling its emoji table for the page icon and resolving every loaded module's file
once (``inspect.stack``) before its first element, and lark building the NDlog parser for the
first query. Doing it here, before the server listens, takes that out of the first paint and
the first switch to a section (0.3 s of the first paint and 0.4 s of the first Reachability on
the demo store).
"""

from __future__ import annotations

import gc
import importlib
import logging
import pkgutil
import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:  # run as a file: dashboard/ is on sys.path, the project root is not
    sys.path.insert(0, _ROOT)


def warm() -> None:
    """Import what the app imports and run each of its one-off first uses once."""
    import streamlit  # noqa: F401  # creates the logger silenced below

    # The sections' cached reads are declared before Streamlit's runtime exists, which it
    # warns about; it looks the cache storage up again when they are called, in the runtime.
    cache_log = logging.getLogger("streamlit.runtime.caching.cache_data_api")
    level = cache_log.level
    cache_log.setLevel(logging.ERROR)
    try:
        from dashboard import graph, sections

        for mod in pkgutil.iter_modules(sections.__path__, f"{sections.__name__}."):
            importlib.import_module(mod.name)
    finally:
        cache_log.setLevel(level)
    import pandas as pd
    import streamlit.emojis  # noqa: F401  # st.set_page_config checks the page icon with it
    from streamlit import env_util

    import netrules.store.sqlite  # noqa: F401  # the store the first visit opens
    from dashboard.sections import timeline
    from netrules.lang import parse_atom

    graph.svg(("a", "b"), graph.merge_links([]), {"a": (0.0, 0.0), "b": (1.0, 1.0)},
              status={"a": "up"})
    timeline.chart(pd.DataFrame(columns=["batch", "time", "links down", "active incidents",
                                         "changed facts"]))
    parse_atom("bestPath(@a, b)")
    # Streamlit's first element checks for a REPL with inspect.stack(); from here on that
    # only looks at modules imported since.
    env_util.is_repl()


def main(argv: list[str]) -> None:
    """Warm the process, then hand ``argv`` (the app path and flags) to ``streamlit run``."""
    warm()
    from streamlit.web import cli

    # Streamlit collects garbage after every script run (each refresh, each click): a full
    # collection over everything imported above holds the GIL for 70 ms while the browser
    # waits for deltas and chunks. Frozen, those long-lived objects are not scanned again.
    gc.collect()
    gc.freeze()
    sys.argv = ["streamlit", "run", *argv]
    cli.main(prog_name="streamlit")  # exits with streamlit's status


if __name__ == "__main__":
    main(sys.argv[1:])
