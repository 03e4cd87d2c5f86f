"""A batch whose delta is id columns (the columnar engine), taken to the store and the alert
rules in bulk: no Fact object per changed fact.

* **Store rows**: per relation a row source (``bulk_rows.IdRows``) the store renders chunk by
  chunk while it writes: each distinct value's JSON once, a row's args text joined from its
  columns' texts in Arrow, in a canonical order so the change log is the same whatever the
  engine's row order (a restarted run writes the same rows).
* **Alert inputs**: the rules see every removed fact of an alert relation (each is a loss to
  judge), but of the added ones only those whose (source, destination) key was lost in this
  batch or has an active alert: the rest can neither cancel a loss nor clear an alert. The
  "does the view still hold this key" question is one vectorised probe of the engine's view.
* **Derivations**: the facts whose kept supports changed get their least-id alive support,
  lowest rank first, so the written set is closed under "body of": ``why`` on any written
  fact ends at base facts. Auxiliary (localization) facts are replaced by their own bodies.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from itertools import repeat

import numpy as np
import pyarrow as pa

from netrules.engine.columnar.keys import pack
from netrules.engine.columnar.psn import ColumnarProgram
from netrules.engine.columnar.sets import distinct
from netrules.engine.columnar.supports import gid, split_gid
from netrules.engine.strategies.columnar import ColumnDelta
from netrules.facts import Fact, Value, value_from_json
from netrules.pipeline.bulk_rows import IdRows, args_texts, json_array
from netrules.pipeline.decode import decode_rows
from netrules.pipeline.texts import STR
from netrules.plan import Plan
from netrules.store import BulkRows, DerivationTexts

__all__ = ["is_columnar", "store_rows", "alert_inputs", "derivations"]


def is_columnar(delta: object) -> bool:
    return isinstance(delta, ColumnDelta)


def store_rows(delta: ColumnDelta, plan: Plan, keep: Iterable[str]) -> BulkRows:
    """The kept relations' changes as row sources the store renders while it writes them."""
    prog = delta.prog
    keep = set(keep)
    out = BulkRows()
    for rel in sorted(delta.columns):
        if rel not in keep:
            continue
        loc = plan.locspec.get(rel, 0)
        out.loc_pos[rel] = loc
        add, rem = delta.ids(rel, 0), delta.ids(rel, 1)
        if len(rem):
            out.removed[rel] = IdRows(prog.values, rem)
        if len(add):
            out.added[rel] = IdRows(prog.values, add, loc)
    return out


def _facts(prog: ColumnarProgram, plan: Plan, rel: str, ids: np.ndarray) -> list[Fact]:
    loc = plan.locspec.get(rel, 0)
    return [Fact(rel, row, loc) for row in decode_rows(prog.values, ids)]


def removed_facts(delta: ColumnDelta, plan: Plan) -> list[Fact]:
    """Every fact the batch removed, decoded (each shared path suffix once)."""
    return [f for rel in sorted(delta.columns) if len(delta.columns[rel][1])
            for f in _facts(delta.prog, plan, rel, delta.ids(rel, 1))]


def _pair_keys(ids: np.ndarray, pos: tuple[int, ...]) -> np.ndarray:
    if len(pos) == 1:
        return ids[:, pos[0]].copy()
    return pack(ids[:, pos[0]], ids[:, pos[1]])


def alert_inputs(delta: ColumnDelta, plan: Plan, keyed: Mapping[str, tuple[int, ...]],
                 whole: Iterable[str], active: Iterable[tuple[str, Iterable[Value]]]
                 ) -> tuple[dict[str, list[Fact]], dict[str, list[Fact]],
                            Callable[[str, tuple], bool]]:
    """(added, removed, view_has) for ``AlertRules.evaluate``.

    ``keyed`` maps the route and reachability relations to their key positions; ``whole``
    names relations whose every change matters (loops, patterns); ``active`` gives the
    (relation, key values) of active alerts.
    """
    prog = delta.prog
    added: dict[str, list[Fact]] = {}
    removed: dict[str, list[Fact]] = {}
    still: set[tuple[str, tuple]] = set()
    active_by: dict[str, list[tuple]] = {}
    for rel, key in active:
        active_by.setdefault(rel, []).append(tuple(key))
    for rel in whole:
        if rel in delta.columns:
            added[rel] = _facts(prog, plan, rel, delta.ids(rel, 0))
            removed[rel] = _facts(prog, plan, rel, delta.ids(rel, 1))
    for rel, pos in keyed.items():
        if rel not in delta.columns or len(pos) not in (1, 2):
            continue
        add, rem = delta.ids(rel, 0), delta.ids(rel, 1)
        rk = _pair_keys(rem, pos)
        wanted = [rk]
        for key in active_by.get(rel, ()):
            ids = [prog.values.lookup(v) for v in key]
            if len(ids) == len(pos) and all(i is not None for i in ids):
                a = np.array([ids], dtype=np.int64)
                wanted.append(_pair_keys(a, tuple(range(len(pos)))))
        ak = _pair_keys(add, pos)
        pick = np.isin(ak, np.concatenate(wanted))
        added[rel] = _facts(prog, plan, rel, add[pick])
        removed[rel] = _facts(prog, plan, rel, rem)
        # which lost keys the view still holds (another row with the same key)
        lost = distinct(rk[~np.isin(rk, ak)]) if len(rk) else rk
        if len(lost):
            r = prog.rels[rel]
            cols = ([lost] if len(pos) == 1
                    else [lost >> np.int64(31), lost & np.int64((1 << 31) - 1)])
            order = np.argsort(pos)
            qi, rows = r.probe(tuple(sorted(pos)), [cols[k] for k in order])
            held = distinct(qi[r.alive[rows]])
            for k in held.tolist():
                vals = tuple(prog.values.decode(int(c[k])) for c in cols)
                still.add((rel, vals))

    def view_has(relation: str, key: tuple) -> bool:
        return (relation, tuple(key)) in still

    return added, removed, view_has


def active_alert_keys(alerts: Iterable[object], keyed: Mapping[str, tuple[int, ...]]
                      ) -> list[tuple[str, tuple]]:
    """(relation, (src, dst)) of active route/reachability alerts, from their subjects."""
    out = []
    for a in alerts:
        subject = getattr(a, "subject", {}) or {}
        rel = subject.get("relation")
        if rel in keyed and "src" in subject and "dst" in subject:
            out.append((rel, (value_from_json(subject["src"]), value_from_json(subject["dst"]))))
    return out


def derivations(delta: ColumnDelta, plan: Plan, limit: int
                ) -> tuple[DerivationTexts, int]:
    """(the derivations to write and the facts whose derivations to drop, as the store's
    texts; the facts skipped by ``limit``). Each fact's text is rendered once from its id
    row (``bulk_rows.args_texts``) and a body is joined from its facts' texts: a link event
    on americas rewrites up to ``limit`` (20,000) derivations, and a Fact and a JSON
    encoding each were most of such a batch."""
    prog = delta.prog
    visible = {prog.codes[r] for r in plan.visible if r in prog.codes}
    aux = {prog.codes[r] for r in plan.aux if r in prog.codes}
    changed = prog.supported_changes()
    code, _ = split_gid(changed)
    changed = changed[np.isin(code, list(visible))]
    changed = changed[prog.alive_gids(changed)]
    out = DerivationTexts()
    for rel, (_, rem_rows) in delta.columns.items():
        if rel in plan.visible and len(rem_rows):
            out.relations.add(rel)
            out.removed.extend(zip(repeat(rel), args_texts(
                prog.values, prog.rels[rel].cols[rem_rows].astype(np.int64)).to_pylist()))
    skipped = max(0, len(changed) - limit)
    changed = _least(changed, prog.rank_of(changed), limit)
    sids = prog.supports.first_of(changed)
    ok = sids >= 0
    changed, sids = changed[ok], sids[ok]
    bodies = _bodies(prog, sids, aux)
    need = distinct(np.concatenate([changed, bodies[bodies >= 0]])) if len(changed) else changed
    texts, items, rel_of = _texts_of_gids(prog, plan, need)
    labels = [r.rule.label or str(r.rule.head) for r in prog.rule_list]
    at = np.searchsorted(need, changed)
    heads = list(zip(rel_of[at].tolist(), texts.take(pa.array(at)).to_pylist(), strict=True))
    out.removed.extend(heads)
    out.added.extend((rel, text, labels[r], body) for (rel, text), r, body in zip(
        heads, prog.supports.rule[sids].tolist(), _body_texts(items, need, bodies),
        strict=True))
    out.relations.update(prog.names[int(c)] for c in distinct(need >> np.int64(34)).tolist())
    out.removed = list(dict.fromkeys(out.removed))  # deletions: any order will do
    return out, skipped


def _texts_of_gids(prog: ColumnarProgram, plan: Plan, gids: np.ndarray
                   ) -> tuple[pa.Array, pa.Array, np.ndarray]:
    """For sorted ``gids``: each one's args text, its body item ``[relation,args,loc]`` as
    ``store._body_json`` writes it, and its relation's name, in ``gids``' order."""
    code, rows = split_gid(gids)
    texts, items = [], []
    rel_of = np.empty(len(gids), dtype=object)
    for c in distinct(code).tolist():  # ascending, as the gids are
        m = code == c
        rel = prog.names[c]
        t = args_texts(prog.values, prog.rels[rel].cols[rows[m]].astype(np.int64))
        texts.append(t)
        items.append(json_array([pa.scalar(json.dumps(rel), STR), t,
                                 pa.scalar(json.dumps(plan.locspec.get(rel, 0)), STR)]))
        rel_of[m] = rel
    if not texts:
        empty = pa.array([], type=STR)
        return empty, empty, rel_of
    return pa.concat_arrays(texts), pa.concat_arrays(items), rel_of


def _body_texts(items: pa.Array, need: np.ndarray, bodies: np.ndarray) -> list[str]:
    """Each body's JSON text (``store._body_json``) from its facts' items (``items[k]`` for
    ``need[k]``): a fact a body holds twice written once, as ``dict.fromkeys`` did; rows
    joined in Arrow, grouped by how many facts they hold."""
    b = bodies.copy()
    n, w = b.shape
    for j in range(1, w):
        for k in range(j):
            b[b[:, j] == b[:, k], j] = -1
    b = np.take_along_axis(b, np.argsort(b < 0, axis=1, kind="stable"), axis=1)
    count = (b >= 0).sum(axis=1)
    out = np.empty(n, dtype=object)
    for k in distinct(count).tolist():
        rows = np.flatnonzero(count == k)
        if not k:
            out[rows] = "[]"
            continue
        parts = [items.take(pa.array(np.searchsorted(need, b[rows, j]))) for j in range(k)]
        out[rows] = json_array(parts).to_pylist()
    return out.tolist()


def _least(gids: np.ndarray, rank: np.ndarray, limit: int) -> np.ndarray:
    """The ``limit`` least of ascending ``gids`` by (rank, gid), in that order. A load's
    million changed facts are cut to a batch's derivations by one partition of the ranks:
    lexsorting them all cost a tenth of americas' load batch outside SQLite."""
    if limit <= 0:
        return gids[:0]
    if len(gids) > limit:
        kth = np.partition(rank, limit - 1)[limit - 1]
        below = rank < kth
        tied = np.flatnonzero(rank == kth)[: limit - int(below.sum())]  # least gids first
        below[tied] = True
        gids, rank = gids[below], rank[below]
    return gids[np.lexsort((gids, rank))]


def _bodies(prog: ColumnarProgram, sids: np.ndarray, aux: set[int]) -> np.ndarray:
    """Each support's body gids (a row each, -1 past its end), an auxiliary (localization)
    fact replaced by its own kept support's body (the store shows the facts a user wrote)."""
    return _expand_rows(prog, prog.supports.bodies(sids), aux)


def _expand_rows(prog: ColumnarProgram, rows: np.ndarray, aux: set[int]) -> np.ndarray:
    """``rows`` of body gids (-1 padded) with each auxiliary fact replaced, in place, by its
    own kept support's body (itself where it has none), as array passes: a link event's
    20,000 derivations were a Python list per body."""
    rows = np.asarray(rows, dtype=np.int64)
    codes = np.array(sorted(aux), dtype=np.int64)
    for _ in range(8):  # auxiliary relations may feed each other; they never recurse
        if not len(rows) or not len(codes):
            break
        is_aux = (rows >= 0) & np.isin(rows >> np.int64(34), codes)
        if not is_aux.any():
            break
        ag = distinct(rows[is_aux])
        inner = prog.supports.first_of(ag)
        have = inner >= 0
        sub = np.full((len(ag), prog.supports.width), -1, dtype=np.int64)
        sub[have] = prog.supports.bodies(inner[have])
        sub[~have, 0] = ag[~have]
        n, w = rows.shape
        big = np.full((n, w, sub.shape[1]), -1, dtype=np.int64)
        big[:, :, 0] = rows
        big[is_aux] = sub[np.searchsorted(ag, rows[is_aux])]
        big = big.reshape(n, -1)
        # each row's entries moved before its -1s, in order
        big = np.take_along_axis(big, np.argsort(big < 0, axis=1, kind="stable"), axis=1)
        used = np.flatnonzero((big >= 0).any(axis=0))
        rows = big[:, : int(used[-1]) + 1] if len(used) else big[:, :1]
    return rows


def _decode_gids(prog: ColumnarProgram, plan: Plan, gids: np.ndarray) -> dict[int, Fact]:
    out: dict[int, Fact] = {}
    code, rows = split_gid(gids)
    for c in distinct(code).tolist():
        m = code == c
        rel = prog.names[c]
        facts = _facts(prog, plan, rel, prog.rels[rel].cols[rows[m]])
        out.update(zip(gids[m].tolist(), facts, strict=True))
    return out


def added_facts(delta: ColumnDelta, plan: Plan, rel: str, limit: int) -> dict[Fact, int]:
    """At most ``limit`` of the facts ``rel`` gained, first in the store's canonical order,
    decoded (the others are never decoded: a load adds millions), each with its row in the
    engine's relation (so ``aggregate_witnesses`` need not encode it back)."""
    if rel not in delta.columns or limit <= 0:
        return {}
    rows = delta.columns[rel][0]
    ids = delta.ids(rel, 0)
    first = IdRows(delta.prog.values, ids).first(limit)
    facts = _facts(delta.prog, plan, rel, ids[first])
    return dict(zip(facts, np.asarray(rows)[first].tolist(), strict=True))


def _alive(rel, rows: np.ndarray) -> np.ndarray:
    return rel.alive[rows]


def aggregate_witnesses(delta: ColumnDelta, plan: Plan, facts: list[Fact],
                        known: Mapping[Fact, int] | None = None
                        ) -> list[tuple[Fact, str, list[Fact]]]:
    """Per fact of a rule that keeps no supports (an aggregate, or a plain rule of a stratum
    iterated through one: best routes' ``route``), one body binding that derives it (MIN and
    MAX bind the aggregated variable to the fact's value), found for all the facts of a rule
    in one join: what the store shows as the support of a fact that keeps none. ``known``:
    rows of facts decoded from this delta."""
    from netrules.engine.columnar.aggregate import AggRule
    from netrules.engine.columnar.joins import bind_head, compile_join

    prog = delta.prog
    aux = {prog.codes[r] for r in plan.aux if r in prog.codes}
    by_rel: dict[str, list[Fact]] = {}
    for f in facts:
        by_rel.setdefault(f.relation, []).append(f)
    out: dict[Fact, tuple[str, list[Fact]]] = {}
    iterated = {id(r) for stage in prog.stages.values() for r in stage.plain}
    for r in prog.rule_list:
        if not (isinstance(r, AggRule) or id(r) in iterated) \
                or r.rule.head.relation not in by_rel:
            continue
        fs = [f for f in by_rel[r.rule.head.relation] if f not in out]
        if not fs:
            continue
        rel = prog.rels[r.rule.head.relation]
        known = known or {}
        rows = np.array([known.get(f, -1) for f in fs], dtype=np.int64)
        todo = np.flatnonzero(rows < 0)  # encoding a path back to ids is per element
        if len(todo):
            rows[todo] = rel.find(prog.values.encode_rows([fs[k].args for k in todo.tolist()],
                                                          rel.arity))
        keep = rows >= 0
        rows, fs = rows[keep], [f for f, k in zip(fs, keep.tolist(), strict=True) if k]
        tab = bind_head(r.rule, rel, rows)
        if isinstance(r, AggRule) and r.agg.func in ("MIN", "MAX") and r.agg.var is not None:
            name = r.agg.var.name
            val = rel.column(rows[tab.vars["#k"]], r.pos)
            if name in tab.vars:
                tab = tab.take(np.flatnonzero(tab.vars[name] == val))
            else:
                tab.vars[name] = val
        join = r.__dict__.get("_witness_join")
        if join is None:
            join = r._witness_join = compile_join(  # type: ignore[attr-defined]
                r.rule, None, frozenset(v for v in tab.vars if not v.startswith("#")))
        tab = join.run(prog.rels, prog.values, tab, lambda j: _alive, _alive)
        if not tab.n:
            continue
        k = tab.vars["#k"]
        _, first = np.unique(k, return_index=True)
        label = r.rule.label or str(r.rule.head)
        gids = np.stack([gid(prog.codes[atom.relation], tab.atoms[j][first])
                         for j, atom in enumerate(r.atoms)], axis=1)
        # a localized rule reads auxiliary facts the store does not keep: show their bodies
        bodies = _expand_rows(prog, gids, aux)
        body_facts = _decode_gids(prog, plan, distinct(bodies[bodies >= 0]))
        for body, kk in zip(bodies.tolist(), k[first].tolist(), strict=True):
            out[fs[kk]] = (label, [body_facts[g] for g in dict.fromkeys(body) if g >= 0])
    return [(f, *out[f]) for f in facts if f in out]
