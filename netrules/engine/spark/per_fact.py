"""The per-fact evaluator's rounds over the columns frame: the fallback for strata the
columnar engine does not run on Spark yet (recursion through an aggregate, path atoms).

A region's rows are turned into the per-fact evaluator's ``(part, rel, args JSON, new)``
frame, its round runs unchanged (``fixpoint._round_fn``, ``iterated.iterated_round_fn``), and
what it returns comes back as columns; a region it hands back untouched stays the table it
was, so only regions that run pay the conversion.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pyarrow as pa

from netrules.engine.spark.columns import table_of_tuples, tuples_of
from netrules.engine.spark.fixpoint import decode_many, encode_many

__all__ = ["in_columns"]


def in_columns(fn: Callable[[pd.DataFrame], pd.DataFrame], width: int
               ) -> Callable[[pa.Table], pa.Table]:
    def run(table: pa.Table) -> pa.Table:
        if not table.num_rows:
            return table
        pdf = pd.DataFrame({"part": table.column("part").to_numpy(),
                            "rel": table.column("rel").to_numpy(zero_copy_only=False),
                            "args": encode_many(tuples_of(table, width)),
                            "new": table.column("new").to_numpy()})
        out = fn(pdf)
        if out is pdf:
            return table
        # rows handed back as they came are taken from the table; only new text is decoded
        keys = pdf["rel"] + "\x00" + pdf["args"]
        once = np.flatnonzero(~keys.duplicated().to_numpy())
        got = pd.Index(keys.iloc[once]).get_indexer(out["rel"] + "\x00" + out["args"])
        pos = np.where(got >= 0, once[got], -1)
        part = out["part"].to_numpy(dtype=np.int32)
        new = out["new"].to_numpy(dtype=bool)
        old = np.flatnonzero(pos >= 0)
        same = table.take(pa.array(pos[old])).set_column(0, "part", pa.array(part[old]))
        fresh = np.flatnonzero(pos < 0)
        made = table_of_tuples(part[fresh], out["rel"].to_numpy(dtype=object)[fresh].tolist(),
                               decode_many(out["args"].to_numpy(dtype=object)[fresh].tolist()),
                               new[fresh], width)
        return pa.concat_tables([same.set_column(2, "new", pa.array(new[old])), made])

    return run
