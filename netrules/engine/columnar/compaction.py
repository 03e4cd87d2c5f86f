"""Dead rows dropped: a derived relation compacted, and every row number that names it
renamed.

Why: rows do not move while facts come and go (relation.py), so a fact that goes and comes
back revives its row, and nothing that names rows need be told. But a relation whose facts
keep changing leaves a row behind for every fact it ever held: a best route's path and cost
after each flap. Measured on americas best routes, 150 single-link down/up pairs after the
load: best path 5.1 M rows for 1.3 M facts, best cost 2.6 M for 1.3 M, the engine's arrays
249 bytes a fact against 95 after the load, and still growing. A live monitor must not grow
with the flaps it has seen.

So before a batch, a derived relation whose dead rows outnumber its living at their peak
(``COMPACT_SHARE``, and at least ``COMPACT_AT``) is compacted: its rows renumbered in order
(``Relation.compact``), and the rows the kept supports, their index by body fact and a copy
stratum's row map hold renamed. The peak, not the count now: a partition kills most of a
reachability view, whose dead rows the heal revives; compacting them in between would make
the heal store every fact again. A view of facts that only come and go is bounded by its
facts anyway; the rows past it are those of facts that changed.

Deltas already given out keep reading the arrays they were made with (``ColumnDelta``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from netrules.engine.columnar.psn import ColumnarProgram

__all__ = ["COMPACT_AT", "COMPACT_SHARE", "compact_rows"]

#: A relation is compacted once it has more than COMPACT_AT dead rows and more than
#: COMPACT_SHARE times the most facts it has held alive.
COMPACT_AT = 1 << 16
COMPACT_SHARE = 1.0


def compact_rows(prog: ColumnarProgram) -> int:
    """Compact every derived relation that is due (see the module's docstring), between
    batches; returns how many were."""
    # (a program may set its own: the tests compact before every batch)
    at = prog.__dict__.get("compact_at", COMPACT_AT)
    share = prog.__dict__.get("compact_share", COMPACT_SHARE)
    due = []
    for name in sorted(prog.plan.derived):
        rel = prog.rels[name]
        # (a relation pickled before peaks were kept starts from its count)
        rel.peak = peak = max(getattr(rel, "peak", 0), rel.count)
        if rel.n - rel.count > max(peak * share, at):
            due.append(name)
    done = 0
    if due:
        # the dead supports gone, once: those left are alive, naming alive rows
        prog.supports.compact(every=True)
    for name in due:
        if _compact(prog, name):
            done += 1
        else:  # not again before the rows double: a failed try costs a pass over all
            prog.rels[name].peak = prog.rels[name].n
    prog.stats["compactions"] = prog.stats.get("compactions", 0) + done
    return done


def _compact(prog: ColumnarProgram, name: str) -> bool:
    """Compact relation ``name`` and rename its rows wherever they are held; False, having
    moved no row, unless every support is alive (``compact_rows`` drops the dead first: a
    dead one may name a row that goes) and none names a row of it that is not alive (no
    dead row can be dropped then)."""
    rel, code, sup = prog.rels[name], prog.codes[name], prog.supports
    if sup.count != sup.n or sup.names_dead(code, rel.alive):
        return False
    new = rel.compact()
    sup.renumber_rows(code, new)
    for cs in prog._copies().values():
        cs.renumber(name, new)
    return True
