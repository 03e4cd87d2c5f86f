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
        return table_of_tuples(out["part"].to_numpy(dtype=np.int32), out["rel"].tolist(),
                               decode_many(out["args"].tolist()),
                               out["new"].to_numpy(dtype=bool), width)

    return run
