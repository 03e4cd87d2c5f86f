"""One module per dashboard section; each exposes ``TITLE`` and ``render(url)``.

A section reads the store through :mod:`dashboard.data` only and keeps every user choice in a
keyed widget, so a live refresh (which reruns the section) never resets what the user picked.
"""
