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

Rows a round does not change (lower facts, contributions not replaced, what was sent when
it is sent again) go back out as the text they came in; a region no contribution reached
after the first round would recompute exactly what it has, so it returns its rows untouched.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from netrules.engine.iterated import apply_once, iterate_from_nothing
from netrules.engine.reference import Database
from netrules.engine.spark.fixpoint import (
    decode_many,
    encode_many,
    load_facts,
    read_relations,
)
from netrules.engine.views import Union
from netrules.plan import Stratum

__all__ = ["iterated_round_fn", "finish", "finish_facts"]

_CONTRIB, _SENT = "#c:", "#s:"

Key = tuple[str, tuple]


def _tagged(kind: str, part: int, rel: str = "") -> str:
    return f"{kind}{part}:{rel}"


def _untag(rel: str) -> tuple[int, str]:
    part, _, name = rel[3:].partition(":")
    return int(part), name


@dataclass
class _Tagged:
    """Bookkeeping rows of one kind, per other region: their positions and decoded facts."""

    rows: dict[int, list[int]] = field(default_factory=lambda: defaultdict(list))
    facts: dict[int, list[Key]] = field(default_factory=lambda: defaultdict(list))

    def add(self, other: int, pos: int, key: Key) -> None:
        self.rows[other].append(pos)
        self.facts[other].append(key)


@dataclass
class _Region:
    """A region's rows by role: lower facts (the positions kept; decoded when the stratum
    reads them), the stratum's own facts (their text by fact, to reuse), contributions kept and
    incoming, and what was sent, per other region."""

    me: int
    lower_rows: list[int]
    lower: Database
    texts: dict[Key, str] = field(default_factory=dict)
    old: _Tagged = field(default_factory=_Tagged)
    incoming: _Tagged = field(default_factory=_Tagged)
    sent: _Tagged = field(default_factory=_Tagged)

    def contributions(self) -> Database:
        """Facts derived elsewhere for this region: a replacement supersedes what it had."""
        fixed = Database()
        for keys in {**self.old.facts, **self.incoming.facts}.values():
            for name, row in keys:
                fixed.add(name, row)
        return fixed

    def kept_contributions(self) -> list[int]:
        out = [i for src, rows in self.old.rows.items() if src not in self.incoming.facts
               for i in rows]
        return out + [i for rows in self.incoming.rows.values() for i in rows]


def _split(pdf: pd.DataFrame, stratum: Stratum, reads: frozenset[str] | None) -> _Region:
    """Sort a region's rows by role, decoding only what the round reads."""
    rels = pdf["rel"].to_numpy(dtype=object)
    args = pdf["args"].to_numpy(dtype=object)
    new = pdf["new"].to_numpy(dtype=bool)
    tag = pdf["rel"].str.startswith((_CONTRIB, _SENT)).to_numpy(dtype=bool)
    own = pdf["rel"].isin(stratum.relations).to_numpy()
    low = np.flatnonzero(~tag & ~own)  # lower facts, messages of a lower stratum among them
    lower, _, keep = load_facts(pdf.iloc[low], new[low], reads)
    region = _Region(int(pdf["part"].iat[0]), low[keep].tolist(), lower)
    idx = np.flatnonzero(own)
    region.texts = dict(zip(zip(rels[idx], decode_many(args[idx].tolist()), strict=True),
                            args[idx], strict=True))
    idx = np.flatnonzero(tag)
    for i, rel, row in zip(idx, rels[idx], decode_many(args[idx].tolist()), strict=True):
        other, name = _untag(rel)
        into = region.sent if rel.startswith(_SENT) else \
            region.incoming if new[i] else region.old
        if name:
            into.add(other, i, (name, row))
        else:  # a replacement's marker: the contribution is what came with it, maybe nothing
            into.facts.setdefault(other, [])
    return region


def _region_round(pdf: pd.DataFrame, stratum: Stratum, part_of: Callable[[str, tuple], int],
                  reads: frozenset[str] | None) -> pd.DataFrame:
    """Recompute the region's part of the stratum and send each changed contribution; rows
    the round does not change go back out as they came."""
    region = _split(pdf, stratum, reads)
    me = region.me
    fixed = region.contributions()
    derived, _ = iterate_from_nothing(stratum, region.lower, fixed,
                                      keep=lambda k: part_of(*k) == me)
    out_for: dict[int, set[Key]] = defaultdict(set)
    for key in apply_once(stratum, region.lower, Union(derived, fixed)):
        dest = part_of(*key)
        if dest != me:  # derived here, located elsewhere: that region's contribution
            out_for[dest].add(key)

    kept = region.lower_rows + region.kept_contributions()
    out = _Rows()
    for rel, rows in derived.rel.items():
        for row in rows:
            out.put(me, rel, row, False, region.texts.get((rel, row)))
    sent = region.sent
    for dest in sorted(set(out_for) | set(sent.facts)):
        now = out_for.get(dest, set())
        if now == set(sent.facts.get(dest, ())):
            kept.extend(sent.rows.get(dest, ()))
            continue
        out.put(dest, _tagged(_CONTRIB, me), (), True)  # a changed contribution goes out whole
        for rel, row in now:
            out.put(dest, _tagged(_CONTRIB, me, rel), row, True)
            out.put(me, _tagged(_SENT, dest, rel), row, False)
    kept.sort()
    return pd.concat([pdf.iloc[kept].assign(new=False), out.frame()], ignore_index=True)


class _Rows:
    """Output rows a round makes; those whose text is not known are encoded together."""

    def __init__(self) -> None:
        self.parts: list[int] = []
        self.rels: list[str] = []
        self.rows: list[tuple] = []
        self.texts: list[str | None] = []
        self.news: list[bool] = []

    def put(self, part: int, rel: str, row: tuple, new: bool, text: str | None = None) -> None:
        self.parts.append(part)
        self.rels.append(rel)
        self.rows.append(row)
        self.texts.append(text)
        self.news.append(new)

    def frame(self) -> pd.DataFrame:
        missing = [i for i, text in enumerate(self.texts) if text is None]
        for i, text in zip(missing, encode_many([self.rows[i] for i in missing]), strict=True):
            self.texts[i] = text
        return pd.DataFrame({"part": np.array(self.parts, dtype=np.int32), "rel": self.rels,
                             "args": self.texts, "new": np.array(self.news, dtype=bool)})


def iterated_round_fn(stratum: Stratum, part_of: Callable[[str, tuple], int], first: bool
                      ) -> Callable[[pd.DataFrame], pd.DataFrame]:
    reads = read_relations(stratum.rules)

    def run(pdf: pd.DataFrame) -> pd.DataFrame:
        if pdf.empty:
            return pdf
        if not first and not pdf["new"].any():
            return pdf  # same lower facts and contributions: the same result as last round
        return _region_round(pdf, stratum, part_of, reads)

    return run


def finish_facts(table: pa.Table, width: int) -> pa.Table:
    """``finish`` over one region's facts in columns."""
    from netrules.engine.spark.columns import distinct

    rel = table.column("rel")
    kept = table.filter(pc.invert(pc.or_(pc.starts_with(rel, _SENT),
                                          pc.match_substring_regex(rel, "^#c:[0-9]+:$"))))
    plain = kept.set_column(1, "rel", pc.replace_substring_regex(kept.column("rel"),
                                                                  "^#c:[0-9]+:", ""))
    return distinct(plain, width)


def finish(state: DataFrame) -> DataFrame:
    """Contributions become plain facts of their region; the sent-memory goes."""
    rel = F.col("rel")
    kept = state.filter(~rel.startswith(_SENT) & ~rel.rlike("^#c:[0-9]+:$"))
    plain = kept.withColumn("rel", F.regexp_replace(rel, "^#c:[0-9]+:", ""))
    return plain.dropDuplicates([c for c in state.columns if c != "new"]).select(*state.columns)
