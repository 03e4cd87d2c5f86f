"""``streamlit run`` for the dashboard, with the heavy libraries imported before the first visit.

Streamlit runs the app script only when a browser connects, so the first visitor would wait
for pandas, plotly and networkx to import (about 1.5 s of the first paint on the demo store).
Importing them here, in the server process before it listens, moves that wait to start-up.
"""

from __future__ import annotations

import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:  # run as a file: dashboard/ is on sys.path, the project root is not
    sys.path.insert(0, _ROOT)


def main(argv: list[str]) -> None:
    """Warm the imports, then hand ``argv`` (the app path and flags) to ``streamlit run``."""
    import networkx  # noqa: F401
    import pandas  # noqa: F401
    import plotly.graph_objects  # noqa: F401
    from streamlit.web import cli

    sys.argv = ["streamlit", "run", *argv]
    cli.main(prog_name="streamlit")  # exits with streamlit's status


if __name__ == "__main__":
    main(sys.argv[1:])
