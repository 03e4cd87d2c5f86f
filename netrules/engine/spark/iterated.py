"""Iterated strata (recursion through an aggregate) on Spark: regions iterate to a local
fixpoint and exchange what they derived for each other, the way routers run path vector.

One round is one ``groupBy(part).applyInPandas`` job, as for the other strata. A region
recomputes its part of the stratum from nothing (``iterated.iterate_from_nothing``) over its
lower facts plus the *contributions* other regions sent it (facts located here, derived
there), and sends each other region its whole new contribution when it differs from the last
one sent; the receiver replaces that sender's contribution wholesale, so a route that
disappears upstream disappears here too. The stratum is done when no region's contribution
changes. This settles on a fixpoint of the whole stratum, which is the reference's answer for
the programs the language documents for this shape (positive link costs: a single fixpoint).

Bookkeeping rows share the facts frame: ``#c:<src>:<rel>`` a contribution received from
region ``src`` (``#c:<src>:`` alone marks a replacement, possibly empty) and ``#s:<dest>:<rel>``
what this region last sent to ``dest``. ``finish`` folds contributions into plain facts.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from netrules.engine.iterated import apply_once, iterate_from_nothing
from netrules.engine.reference import Database
from netrules.engine.views import Union
from netrules.plan import Plan, Stratum

__all__ = ["iterated_round_fn", "finish"]

_CONTRIB, _SENT = "#c:", "#s:"


def _tagged(kind: str, part: int, rel: str = "") -> str:
    return f"{kind}{part}:{rel}"


def _untag(rel: str) -> tuple[int, str]:
    part, _, name = rel[3:].partition(":")
    return int(part), name


def iterated_round_fn(plan: Plan, stratum: Stratum, part_of: Callable[[str, tuple], int],
                      decode: Callable[[str], tuple], encode: Callable[[tuple], str]):
    rels = stratum.relations

    def run(pdf: pd.DataFrame) -> pd.DataFrame:
        if pdf.empty:
            return pdf
        me = int(pdf["part"].iloc[0])
        lower = Database()
        contrib: dict[int, list[tuple[str, tuple]]] = defaultdict(list)
        incoming: dict[int, list[tuple[str, tuple]]] = {}
        sent: dict[int, set[tuple[str, tuple]]] = defaultdict(set)
        for rel, args, new in zip(pdf["rel"], pdf["args"], pdf["new"], strict=True):
            if rel.startswith(_CONTRIB):
                src, name = _untag(rel)
                if new:
                    got = incoming.setdefault(src, [])
                    if name:
                        got.append((name, decode(args)))
                elif name:
                    contrib[src].append((name, decode(args)))
            elif rel.startswith(_SENT):
                dest, name = _untag(rel)
                sent[dest].add((name, decode(args)))
            elif rel not in rels:  # this region's own stratum facts are recomputed below
                lower.add(rel, decode(args))
        contrib.update(incoming)
        fixed = Database()
        for rows in contrib.values():
            for name, row in rows:
                fixed.add(name, row)
        derived, _ = iterate_from_nothing(stratum, lower, fixed,
                                          keep=lambda k: part_of(*k) == me)
        out_for: dict[int, set[tuple[str, tuple]]] = defaultdict(set)
        for rel, rows in derived.rel.items():
            for row in rows:
                out_for[me].add((rel, row))
        for key in apply_once(stratum, lower, Union(derived, fixed)):
            dest = part_of(*key)
            if dest != me:  # derived here, located elsewhere: that region's contribution
                out_for[dest].add(key)

        parts: list[int] = []
        names: list[str] = []
        args_out: list[str] = []
        news: list[bool] = []

        def put(part: int, rel: str, row: tuple | None, new: bool) -> None:
            parts.append(part)
            names.append(rel)
            args_out.append("[]" if row is None else encode(row))
            news.append(new)

        for rel, rows in lower.rel.items():
            for row in rows:
                put(me, rel, row, False)
        for rel, row in out_for.pop(me, ()):
            put(me, rel, row, False)
        for src, rows in contrib.items():
            for rel, row in rows:
                put(me, _tagged(_CONTRIB, src, rel), row, False)
        for dest in sorted(set(out_for) | set(sent)):
            now = out_for.get(dest, set())
            if now != sent.get(dest, set()):  # a changed contribution goes out whole
                put(dest, _tagged(_CONTRIB, me), None, True)
                for rel, row in now:
                    put(dest, _tagged(_CONTRIB, me, rel), row, True)
            for rel, row in now:
                put(me, _tagged(_SENT, dest, rel), row, False)
        return pd.DataFrame({"part": parts, "rel": names, "args": args_out, "new": news})

    return run


def finish(state: DataFrame) -> DataFrame:
    """Contributions become plain facts of their region; the sent-memory goes."""
    rel = F.col("rel")
    kept = state.filter(~rel.startswith(_SENT) & ~rel.rlike("^#c:[0-9]+:$"))
    plain = kept.withColumn("rel", F.regexp_replace(rel, "^#c:[0-9]+:", ""))
    return plain.dropDuplicates(["part", "rel", "args"]).select("part", "rel", "args", "new")
