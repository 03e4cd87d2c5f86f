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


def removed_texts(delta: ColumnDelta, rels: Iterable[str]) -> list[tuple[str, str]]:
    """(relation, args text) of every fact of ``rels`` the batch removed, rendered from its
    id row: the store's identity of a fact, by which the pipeline's mirror of the witnesses
    it wrote finds the ones a removal made stale."""
    prog = delta.prog
    out: list[tuple[str, str]] = []
    for rel in sorted(set(rels) & delta.columns.keys()):
        rem_rows = delta.columns[rel][1]
        if len(rem_rows):
            out.extend(zip(repeat(rel), args_texts(
                prog.values, prog.rels[rel].cols[rem_rows].astype(np.int64)).to_pylist()))
    return out


def derivations(delta: ColumnDelta, plan: Plan, limit: int
                ) -> tuple[DerivationTexts, int]:
    """(the derivations to write and the facts whose derivations to replace, as the store's
    texts; the facts skipped by ``limit``). Each fact's text is rendered once from its id
    row (``bulk_rows.args_texts``) and a body is joined from its facts' texts: a link event
    on americas rewrites up to ``limit`` (20,000) derivations, and a Fact and a JSON
    encoding each were most of such a batch. A fact that left its view takes its
    derivations along in the store's own write of the removal (``Store._write_rows``)."""
    prog = delta.prog
    visible = {prog.codes[r] for r in plan.visible if r in prog.codes}
    aux = {prog.codes[r] for r in plan.aux if r in prog.codes}
    changed = prog.supported_changes()
    code, _ = split_gid(changed)
    changed = changed[np.isin(code, list(visible))]
    changed = changed[prog.alive_gids(changed)]
    out = DerivationTexts()
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


def added_rows(delta: ColumnDelta, rel: str, limit: int) -> np.ndarray:
    """Rows of at most ``limit`` of the facts ``rel`` gained, first in the store's
    canonical order (the others are never rendered: a load adds millions)."""
    if rel not in delta.columns or limit <= 0:
        return np.empty(0, np.int64)
    rows = np.asarray(delta.columns[rel][0], dtype=np.int64)
    return rows[IdRows(delta.prog.values, delta.ids(rel, 0)).first(limit)]


def _alive(rel, rows: np.ndarray) -> np.ndarray:
    return rel.alive[rows]


#: A witness as the pipeline keeps it: the head's (relation, args text), the rule's label,
#: the body's JSON text (``store._body_json``) and the body facts' (relation, args text).
Witness = tuple[tuple[str, str], str, str, tuple[tuple[str, str], ...]]


def aggregate_witnesses(delta: ColumnDelta, plan: Plan, rows: Mapping[str, np.ndarray]
                        ) -> list[Witness]:
    """Per fact of a rule that keeps no supports (an aggregate, or a plain rule of a stratum
    iterated through one: best routes' ``route``), given by its row, one body binding that
    derives it (MIN and MAX bind the aggregated variable to the fact's value), found for all
    the facts of a rule in one join and rendered as the store's texts: what the store shows
    as the support of a fact that keeps none. A Fact per head and body fact, hashed into a
    mirror of the written witnesses, was 0.67 s of a 3.2 s link event on europe's best
    routes, where the engine took 0.19 s."""
    heads, labels, bodies = _witness_gids(delta.prog, plan, rows)
    if not len(heads):
        return []
    need = distinct(np.concatenate([heads, bodies[bodies >= 0]]))
    texts, items, rel_of = _texts_of_gids(delta.prog, plan, need)
    keys = list(zip(rel_of.tolist(), texts.to_pylist(), strict=True))
    body_texts = _body_texts(items, need, bodies)
    at = np.searchsorted(need, heads).tolist()
    body_at = np.where(bodies >= 0, np.searchsorted(need, bodies), -1).tolist()
    return [(keys[h], label, text, tuple(keys[b] for b in dict.fromkeys(row) if b >= 0))
            for h, label, text, row in zip(at, labels, body_texts, body_at, strict=True)]


def _witness_gids(prog: ColumnarProgram, plan: Plan, rows: Mapping[str, np.ndarray]
                  ) -> tuple[np.ndarray, list[str], np.ndarray]:
    """(head gids, each one's rule label, body gids a row each: -1 past its end, auxiliary
    facts replaced by their bodies) of the facts at ``rows`` that a rule finds a witness
    for, the first rule that does."""
    from netrules.engine.columnar.aggregate import AggRule
    from netrules.engine.columnar.joins import bind_head, compile_join

    aux = {prog.codes[r] for r in plan.aux if r in prog.codes}
    todo = {rel: distinct(np.asarray(r, dtype=np.int64)) for rel, r in rows.items() if len(r)}
    heads: list[np.ndarray] = []
    labels: list[str] = []
    bodies: list[np.ndarray] = []
    iterated = {id(r) for stage in prog.stages.values() for r in stage.plain}
    for r in prog.rule_list:
        name = r.rule.head.relation
        if not (isinstance(r, AggRule) or id(r) in iterated) or not len(todo.get(name, ())):
            continue
        rel, at = prog.rels[name], todo[name]
        tab = bind_head(r.rule, rel, at)
        if isinstance(r, AggRule) and r.agg.func in ("MIN", "MAX") and r.agg.var is not None:
            var = r.agg.var.name
            val = rel.column(at[tab.vars["#k"]], r.pos)
            if var in tab.vars:
                tab = tab.take(np.flatnonzero(tab.vars[var] == val))
            else:
                tab.vars[var] = val
        join = r.__dict__.get("_witness_join")
        if join is None:
            join = r._witness_join = compile_join(  # type: ignore[attr-defined]
                r.rule, None, frozenset(v for v in tab.vars if not v.startswith("#")))
        tab = join.run(prog.rels, prog.values, tab, lambda j: _alive, _alive)
        if not tab.n:
            continue
        k = tab.vars["#k"]
        _, first = np.unique(k, return_index=True)
        found = k[first]
        heads.append(gid(prog.codes[name], at[found]))
        labels += [r.rule.label or str(r.rule.head)] * len(found)
        gids = np.stack([gid(prog.codes[atom.relation], tab.atoms[j][first])
                         for j, atom in enumerate(r.atoms)], axis=1)
        bodies.append(_expand_rows(prog, gids, aux))
        left = np.ones(len(at), dtype=bool)
        left[found] = False
        todo[name] = at[left]
    if not heads:
        return np.empty(0, np.int64), [], np.empty((0, 1), np.int64)
    width = max(b.shape[1] for b in bodies)
    body = np.full((sum(len(b) for b in bodies), width), -1, dtype=np.int64)
    n = 0
    for b in bodies:
        body[n:n + len(b), :b.shape[1]] = b
        n += len(b)
    return np.concatenate(heads), labels, body
