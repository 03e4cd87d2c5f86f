"""A region of a positive resident program as columns: the rounds of ``steps.py`` run by the
columnar engine, with facts, ranks and kept supports in its arrays and messages as Arrow.

The region is a ``ColumnarProgram`` over the whole plan whose batch-level machinery is driven a
round at a time: a kill round is its frontier loop over the kept supports, a rederive round its
head-bound joins, an insert round its semi-naive rounds, each over what is alive here (a suspect
is simply not alive). The protocol is ``steps.py``'s, so ranks stay well-founded across regions:
a support is built where its body is, with its rank, and sent to its head's region, which admits
a fact that is not shown with its least-ranked candidates (a shown fact keeps the supports it
has, as the columnar engine does). A fact another region holds takes a row here, never alive,
when a support kept here names it: rows never move, so kill messages find the supports they end.

What crosses regions is values, not ids (each region has its own dictionary): a blob is an
LZ4 Arrow IPC stream of facts in ``spark/columns.py``'s typed columns, and a support message
adds a second stream of int32 columns (head, rank, rule, body atoms) indexing those facts, so a
body fact shared by many messages crosses once. A region's log is the inputs of its rounds:
replaying them re-runs the rounds, which are deterministic, so a worker that missed rounds
catches up without a per-fact log and a snapshot is the program's arrays, pickled.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from netrules.engine.columnar import kernels
from netrules.engine.columnar.hashmap import Int64Map
from netrules.engine.columnar.joins import bind_head
from netrules.engine.columnar.psn import ColumnarProgram, _Changes, _Rule
from netrules.engine.columnar.relation import KeyedRows
from netrules.engine.columnar.sets import distinct
from netrules.engine.columnar.supports import gid, split_gid
from netrules.engine.firing import FactKey
from netrules.engine.reference import Database
from netrules.engine.regional.counting import count, overdelete, witness
from netrules.engine.regional.state import RegionState
from netrules.engine.regional.steps import Outbox, Program, Stage, settle
from netrules.engine.spark.columns import ids_of, table_of, table_of_tuples, tuples_of
from netrules.engine.spark.packed import pack as pack_lz4
from netrules.engine.views import Patched
from netrules.errors import EngineError
from netrules.plan import Plan
from netrules.plan.stratify import stratify

__all__ = ["ColumnarRegion", "why_per_fact", "bind", "tables_of"]

_NONE = np.empty(0, np.int64)
Cands = list[tuple[_Rule, np.ndarray, np.ndarray, np.ndarray]]


def counted(plan: Plan) -> list[str]:
    """Relations of the strata a region keeps per fact: aggregates and negation
    (``counting.py``'s iteration has no columnar form yet)."""
    return sorted(x for s in plan.strata if s.aggregates or s.negation or s.iterated
                  for x in s.relations)


def positive_plan(plan: Plan) -> Plan:
    """``plan`` with only its positive strata's rules: what a region's columns derive
    (counted relations are base facts there, mirrored from the per-fact side)."""
    rules = tuple(r for s in plan.strata if not (s.aggregates or s.negation or s.iterated)
                  for r in s.rules)
    return replace(plan, rules=rules, strata=tuple(stratify(rules)))


def why_per_fact(plan: Plan) -> str | None:
    """Why every region of ``plan`` holds facts one by one (None: columns hold its positive
    stages)."""
    try:
        ColumnarProgram(positive_plan(plan))
    except EngineError as err:
        return str(err)
    return None


def bind(state: Any, prog: Program) -> Any:
    """``state`` ready to replay rounds: a columnar region re-runs them with ``prog``."""
    if isinstance(state, ColumnarRegion):
        state.prog = prog
    return state


#: Fact tables up to this many rows cross as Python values (``columns.table_of_tuples``):
#: a single link event's messages are a few facts, and the column-at-a-time encoding costs
#: about a millisecond a table whatever its size (measured 5 rows: 2.3 ms against 0.3 ms).
FEW = 256
#: Blobs of more rows than this are LZ4-compressed; below it the codec's fixed cost (about
#: 0.15 ms to write and again to read) is most of the message.
COMPRESS = 4096
_RAW = pa.ipc.IpcWriteOptions()


def _pack(table: pa.Table) -> bytes:
    if table.num_rows > COMPRESS:
        return pack_lz4(table)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema, options=_RAW) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


def _unpack(blob: bytes) -> pa.Table:
    return pa.ipc.open_stream(blob).read_all()


_SUPPORTS = b"S"  # a support message: this byte, the facts stream's length, both streams


def tables_of(blob: bytes) -> list[pa.Table]:
    """The Arrow tables of a blob a columnar region sent: facts, or facts and the support
    messages' index into them."""
    if blob[:1] != _SUPPORTS:
        return [_unpack(blob)]
    n = struct.unpack_from("<Q", blob, 1)[0]
    return [_unpack(blob[9:9 + n]), _unpack(blob[9 + n:])]


class ColumnarRegion:
    """One region's facts, ranks and kept supports as columns; see the module docstring.

    A program with counting stages (aggregates, negation) keeps those per fact, in a
    ``RegionState`` beside the columns (``facts``): each side owns the relations its stages
    derive (and the base relations when it runs the first stage), and a stage reading the
    other side's relations first mirrors their net change in the batch so far (the columns'
    as facts at a counting stage's first round, the facts' as base rows at a positive
    stage's). Mirrored changes are not reported (their owner reports them), and the two
    sides log into one list: a positive round as its inputs, a counting round as the
    per-fact changes it made."""

    def __init__(self, region: int, prog: Program) -> None:
        self.region, self.k = region, prog.k
        self.cp = ColumnarProgram(positive_plan(prog.plan), prog.k)
        self.counted = frozenset(counted(prog.plan))
        self.facts_state: RegionState | None = None
        # base facts (of any relation, named by the program or not) go to the first stage
        self.base_facts = prog.stages[0].kind != "psn"
        self.derived = frozenset(prog.plan.derived) - self.counted
        if self.counted:
            self.facts_state = RegionState(region, prog.k)
        self.width = max(prog.plan.arity.values(), default=0)
        plan_rid = {id(r): i for i, r in enumerate(prog.plan.rules)}
        self.to_plan = np.array([plan_rid[id(c.rule)] for c in self.cp.rule_list], np.int64)
        self.from_plan = {int(p): c for c, p in enumerate(self.to_plan)}
        self.ch = _Changes(0)
        self.batch = 0
        self.reported: dict[str, np.ndarray] = {}  # net flip already reported, per row
        self.loc = Int64Map()  # location value id -> its region
        self._log: list[tuple] | None = None
        self.prog: Program | None = prog

    def per_fact(self, rel: str) -> bool:
        """Whether the per-fact side owns ``rel`` (the columns hold only a mirror)."""
        return rel in self.counted or (self.base_facts and rel not in self.derived)

    @property
    def log(self) -> list[tuple] | None:
        return self._log

    @log.setter
    def log(self, log: list[tuple] | None) -> None:
        """One list for both sides, so a replay interleaves them as they ran."""
        self._log = log
        if self.facts_state is not None:
            self.facts_state.log = log

    # -- the Regions protocol's reads --------------------------------------------------------
    def visible(self) -> list[FactKey]:
        out: list[FactKey] = []
        for name, rel in self.cp.rels.items():
            if not self.per_fact(name):
                rows = rel.alive_rows()
                out += [(name, row) for row in self.cp.values.decode_rows(rel.cols[rows])]
        if self.facts_state is not None:
            out += [k for k in self.facts_state.visible() if self.per_fact(k[0])]
        return out

    def shown(self, rel: str) -> Any:
        if self.per_fact(rel) and self.facts_state is not None:
            return Patched(self.facts_state.db, hide=(self.facts_state.susp,))
        db = Database()
        r = self.cp.rels.get(rel)
        if r is not None:
            for row in self.cp.values.decode_rows(r.cols[r.alive_rows()]):
                db.add(rel, row)
        return db

    def facts(self) -> int:
        n = sum(r.count for name, r in self.cp.rels.items() if not self.per_fact(name))
        if self.facts_state is not None:
            n += sum(len(rows) for rel, rows in self.facts_state.db.rel.items()
                     if self.per_fact(rel))
        return n

    def records(self) -> int:
        extra = self.facts_state.records() if self.facts_state is not None else 0
        return self.cp.supports.count + extra

    def __getstate__(self) -> dict[str, Any]:
        st = dict(self.__dict__)
        st["_log"] = st["prog"] = None
        return st

    # -- rounds ------------------------------------------------------------------------------
    def replay(self, ops: list[tuple]) -> None:
        """Re-run logged positive rounds and apply logged per-fact changes, in order
        (``bind`` first), logging off."""
        log, self.log = self.log, None
        try:
            for op in ops:
                if op[0] == "step":
                    self.step(*op[1:])
                else:
                    assert self.facts_state is not None
                    self.facts_state.replay([op])
        finally:
            self.log = log

    def step(self, step: tuple[str, int], batch: int, common: Any, mine: Any) -> Outbox:
        """One round (``driver.run_step``'s, for this representation)."""
        prog = self.prog
        assert prog is not None, "bind the region to its program first"
        kind, s = step
        stage = prog.stages[s]
        if stage.kind != "psn":
            return self._count(prog, stage, kind, batch, common, mine)
        if self.log is not None:
            self.log.append(("step", step, batch, common, mine))
        self._settle(batch)
        self.cp.supports.touched = []
        if self.facts_state is not None:
            log, self.facts_state.log = self.facts_state.log, None  # the rerun redoes it
            try:
                settle(self.facts_state, batch)
            finally:
                self.facts_state.log = log
            if kind == "kill" and common is None:  # a positive stage's first round above
                self._mirror_facts(stage)
        if kind == "kill":
            out = self._kill(prog, stage, common, mine or [])
        elif kind == "rederive":
            out = self._rederive(prog, stage, common)
        elif kind == "insert":
            msgs, seeds = mine or ([], [])
            out = self._insert(prog, stage, msgs, seeds, bool(common))
        else:
            raise ValueError(f"round kind {kind!r} has no columnar form")
        out.flips = self._flips()
        if prog.report_supports:
            out.supports = self._first_supports()
        return out

    def _count(self, prog: Program, stage: Stage, kind: str, batch: int, common: Any,
               mine: Any) -> Outbox:
        """A counting stage's round, per fact (``counting.py``), after mirroring the columns'
        relations it reads at its first round."""
        st = self.facts_state
        assert st is not None
        self._settle(batch)
        st.step_sup = set()
        settle(st, batch)
        if kind == "over" and common:
            self._mirror_columns(stage)
        st.step_flips, st.step_sup = {}, set()
        if kind == "over":
            out = overdelete(st, prog, stage, bool(common), mine)
        elif kind == "count":
            out = count(st, prog, stage, bool(common), mine or [])
        else:
            raise ValueError(f"unknown round kind {kind!r}")
        out.flips = {k: n for k, n in st.step_flips.items() if self.per_fact(k[0])}
        st.step_flips = {}
        if prog.report_supports:
            keys = {k for k in st.step_sup if self.per_fact(k[0])}
            out.supports = st.first_supports(keys)
            for key, sup in out.supports.items():  # counted facts keep counts, not supports
                if sup is None and key[0] in prog.counted and st.shown(key):
                    out.supports[key] = witness(st, prog, key)
        st.step_sup = set()
        return out

    def _mirror_columns(self, stage: Stage) -> None:
        """The net change in this batch of the columns' relations ``stage`` reads, made in
        the per-fact state (logged there, as its own changes are)."""
        st = self.facts_state
        assert st is not None
        for name in sorted(n for n in stage.reads if not self.per_fact(n)):
            rel = self.cp.rels.get(name)
            if rel is None:
                continue
            came, went = self.ch.net(rel)
            for row in self.cp.values.decode_rows(rel.cols[went]):
                if (name, row) in st.db:
                    st.remove((name, row))
            for row in self.cp.values.decode_rows(rel.cols[came]):
                if (name, row) not in st.db:
                    st.add((name, row))

    def _mirror_facts(self, stage: Stage) -> None:
        """The net change in this batch of the per-fact relations ``stage`` reads, as base
        rows of the columns."""
        st = self.facts_state
        assert st is not None
        came: dict[str, list[tuple]] = {}
        went: dict[str, list[tuple]] = {}
        reads = {n for n in stage.reads if self.per_fact(n)}
        for (name, row), n in st.flips.items():
            if name in reads:
                (came if n > 0 else went).setdefault(name, []).append(row)
        cp, ch = self.cp, self.ch
        for name, rows in sorted(went.items()):
            rel = cp.relation(name, len(rows[0]))
            found = rel.find(self._ids(name, rows, rel.arity))
            found = distinct(found[found >= 0])
            found = found[rel.alive[found]]
            ch.touch(rel, found)
            rel.set_dead(found)
        for name, rows in sorted(came.items()):
            rel = cp.relation(name, len(rows[0]))
            found = distinct(rel.rows_for(self._ids(name, rows, rel.arity)))
            found = found[~rel.alive[found]]
            ch.touch(rel, found)
            rel.set_alive(found)

    def _settle(self, batch: int) -> None:
        """Start ``batch``: the last batch's suspects stay dead (no support left), its
        bookkeeping is cleared, and large appends are sorted and slack given back."""
        if self.batch == batch:
            return
        cp = self.cp
        self.ch.end(cp.rels)
        self.reported = {}
        cp.supports.compact()
        cp.supports.settle()
        cp.supports.trim()
        for rel in cp.rels.values():
            rel.trim()
        self.ch = _Changes(batch)
        self.batch = batch

    def _codes(self, stage: Stage) -> np.ndarray:
        return np.array(sorted(self.cp.codes[n] for n in stage.relations if n in self.cp.codes),
                        dtype=np.int64)

    def _rules(self, stage: Stage) -> list[_Rule]:
        return [self.cp.rule_list[self.from_plan[rid]] for rid, _r in stage.rules]  # type: ignore[misc]

    def _lower(self, stage: Stage, which: int) -> dict[str, np.ndarray]:
        """Rows of relations ``stage`` reads from below that came (0) or went (1) here in
        this batch, net."""
        out = {}
        for name in sorted(stage.reads):
            rel = self.cp.rels.get(name)
            if rel is not None:
                rows = self.ch.net(rel)[which]
                if len(rows):
                    out[name] = rows
        return out

    def _kill(self, prog: Program, stage: Stage, dead: Any, gone_here: list[FactKey]
              ) -> Outbox:
        out = Outbox()
        cp, ch = self.cp, self.ch
        for name, cols in self._encode(gone_here).items():
            rel = cp.relation(name, cols.shape[1])
            rows = rel.find(cols)
            rows = distinct(rows[rows >= 0])
            rows = rows[rel.alive[rows]]
            ch.touch(rel, rows)
            rel.set_dead(rows)
        if dead is None:  # the stage's first round above another: what died below here
            gone = self._lower(stage, 1)
            if gone:
                out.dead = [self._fact_blob(gone)]
            frontier = [gid(cp.codes[n], r) for n, r in gone.items()]
        else:
            frontier = [gid(cp.codes[n], r) for n, r in self._find(dead).items()]
        found = self._kill_from(self._codes(stage),
                                np.concatenate(frontier) if frontier else _NONE)
        if found:
            out.suspects = [self._fact_blob(found)]
            out.n_suspects = sum(len(r) for r in found.values())
        return out

    def _kill_from(self, codes: np.ndarray, frontier: np.ndarray) -> dict[str, np.ndarray]:
        """Kill every kept support of the stage's facts that uses a fact of ``frontier``; a
        fact left with none is hidden (suspect) and kills in turn, until nothing dies."""
        cp, sup = self.cp, self.cp.supports
        found: dict[str, list[np.ndarray]] = {}
        while len(frontier) and len(codes):
            sids = sup.using(frontier)
            if len(sids):
                hc, _ = split_gid(sup.heads(sids))
                sids = sids[np.isin(hc, codes)]
            if not len(sids):
                break
            hc, hr = split_gid(sup.kill(distinct(sids)))
            nxt = []
            for code in distinct(hc).tolist():
                name = cp.names[code]
                rel = cp.rels[name]
                gone = kernels.release(rel.nsup, rel.alive, hr[hc == code])
                if len(gone):
                    self.ch.hidden(rel, gone)
                    found.setdefault(name, []).append(gone)
                    nxt.append(gid(code, gone))
            frontier = np.concatenate(nxt) if nxt else _NONE
        return {n: np.concatenate(p) for n, p in found.items()}

    def _rederive(self, prog: Program, stage: Stage, blobs: list[bytes]) -> Outbox:
        """Every derivation here of a suspect (anywhere) from standing facts, sent with its
        rank to the suspect's region. A suspect this region never derived has no row here
        and is skipped: whatever here derives it from facts that stood before the batch was
        derived when the last of them came, which stored the head's row; facts that came in
        this batch derive it in the insert rounds."""
        cp = self.cp
        suspects = {}
        for name, rows in self._find(blobs).items():
            suspects[name] = rows
        only = {n: KeyedRows(cp.rels[n], rows) for n, rows in suspects.items()}
        new = cp._new()
        cands: Cands = []
        srels = stage.relations
        for r in self._rules(stage):
            rows = suspects.get(r.rule.head.relation)
            if rows is None:
                continue
            tab = bind_head(r.rule, cp.rels[r.rule.head.relation], rows)
            tab = r.from_head.run(cp.rels, cp.values, tab, lambda j: new, new)
            if tab.n and (c := cp._derived(r, tab, srels, only, rows[tab.vars["#k"]])):
                cands.append(c)
        out = Outbox()
        self._send(prog, cands, out)
        return out

    def _insert(self, prog: Program, stage: Stage, inbox: list[bytes], seeds: list[FactKey],
                below: bool) -> Outbox:
        """Base facts inserted here, the facts below that appeared here (``below``) and the
        derivations sent here, then the stage's rules semi-naively inside the region; heads
        located elsewhere leave as messages."""
        out = Outbox()
        cp, ch = self.cp, self.ch
        delta: dict[str, np.ndarray] = {}
        for name, cols in self._encode(seeds).items():
            rel = cp.relation(name, cols.shape[1])
            rows = distinct(rel.rows_for(cols))
            rows = rows[~rel.alive[rows]]
            ch.touch(rel, rows)
            rel.set_alive(rows)
            if len(rows):
                delta[name] = rows
        if below:
            delta.update(self._lower(stage, 0))
        born = self._accept(inbox)
        out.n_revived = self._revived(born)
        for name, rows in born.items():
            delta[name] = np.concatenate([delta[name], rows]) if name in delta else rows
        srels = stage.relations
        rules = self._rules(stage)
        remote: Cands = []
        while delta:
            cands = cp._round(srels, rules, delta)
            local = self._split(prog, cands, remote)
            delta = {n: r for n, r in cp._admit(local, ch).items() if len(r)}
        cp._flush()
        self._send(prog, remote, out)
        return out

    def _revived(self, born: dict[str, np.ndarray]) -> int:
        """Admitted facts that were shown when the batch began: suspects kept."""
        return sum(int(self.cp.rels[n].tbefore[r].sum()) for n, r in born.items())

    def _accept(self, blobs: list[bytes]) -> dict[str, np.ndarray]:
        """Admit the facts here that support messages derive and that are not shown, each
        with its least-ranked candidates (up to K)."""
        cp = self.cp
        cands: Cands = []
        for blob in blobs:
            n = struct.unpack_from("<Q", blob, 1)[0]
            facts = self._decode_facts([blob[9:9 + n]])
            index = _unpack(blob[9 + n:])
            fg = np.full(index.column("nfacts")[0].as_py() if index.num_rows else 0, -1,
                         np.int64)
            for name, (at, cols) in facts.items():
                rel = cp.relation(name, cols.shape[1])
                fg[at] = gid(cp.codes[name], rel.rows_for(cols))
            head = fg[index.column("head").to_numpy()]
            rank = index.column("rank").to_numpy().astype(np.int32)
            rule = index.column("rule").to_numpy()
            body = np.full((index.num_rows, cp.supports.width), -1, np.int64)
            for j in range(cp.supports.width):
                name = f"b{j}"
                if name in index.column_names:
                    b = index.column(name).to_numpy()
                    body[:, j] = np.where(b >= 0, fg[np.maximum(b, 0)], -1)
            for rid in distinct(rule).tolist():
                sel = np.flatnonzero(rule == rid)
                r = cp.rule_list[rid]
                rel = cp.rels[r.rule.head.relation]  # type: ignore[union-attr]
                rows = split_gid(head[sel])[1]
                ok = ~rel.alive[rows]
                if ok.any():
                    cands.append((r, rows[ok], body[sel[ok]], rank[sel[ok]]))  # type: ignore[arg-type]
        born = cp._admit(cands, self.ch) if cands else {}
        return {n: r for n, r in born.items() if len(r)}

    # -- messages ----------------------------------------------------------------------------
    def _dest(self, prog: Program, name: str, cols: np.ndarray) -> np.ndarray:
        """The region of each row of ``name`` (each location value looked up once ever)."""
        spec = prog.plan.locspec.get(name, 0)
        if spec is None or not len(cols):
            return np.zeros(len(cols), np.int32)
        ids = cols[:, spec].astype(np.int64)
        got = self.loc.get(ids)
        miss = got < 0
        if miss.any():
            unknown = distinct(ids[miss])
            arity = cols.shape[1]
            parts = []
            for v in self.cp.values.decode_column(unknown):
                probe = [None] * arity
                probe[spec] = v
                parts.append(prog.part_of(name, tuple(probe)))
            found = np.array(parts, np.int64)
            self.loc.put_new(unknown, found)
            got[miss] = found[np.searchsorted(unknown, ids[miss])]
        return got

    def _split(self, prog: Program, cands: Cands, remote: Cands) -> Cands:
        """Candidates whose head is located here; the others are appended to ``remote``."""
        local: Cands = []
        me = self.region
        for r, rows, body, rank in cands:
            rel = self.cp.rels[r.rule.head.relation]
            dest = self._dest(prog, rel.name, rel.cols[rows])
            here = dest == me
            if here.all():
                local.append((r, rows, body, rank))
                continue
            if here.any():
                local.append((r, rows[here], body[here], rank[here]))
            away = ~here
            remote.append((r, rows[away], body[away], rank[away]))
        return local

    def _send(self, prog: Program, cands: Cands, out: Outbox) -> None:
        """Candidates as one support-message blob per destination region."""
        if not cands:
            return
        cp = self.cp
        heads = np.concatenate([gid(cp.codes[r.rule.head.relation], rows)
                                for r, rows, _b, _k in cands])
        body = np.concatenate([b for _r, _rows, b, _k in cands])
        rank = np.concatenate([k for _r, _rows, _b, k in cands])
        rule = np.concatenate([np.full(len(rows), r.id, np.int64) for r, rows, _b, _k in cands])
        code, rows = split_gid(heads)
        dest = np.zeros(len(heads), np.int32)
        for c in distinct(code).tolist():
            name = cp.names[c]
            sel = code == c
            dest[sel] = self._dest(prog, name, cp.rels[name].cols[rows[sel]])
        for d in distinct(dest).tolist():
            sel = np.flatnonzero(dest == d)
            out.send(d, self._support_blob(heads[sel], body[sel], rank[sel], rule[sel]))

    def _support_blob(self, heads: np.ndarray, body: np.ndarray, rank: np.ndarray,
                      rule: np.ndarray) -> bytes:
        used = body >= 0
        every = np.concatenate([heads, body[used]])
        uniq, inv = np.unique(every, return_inverse=True)
        cols = {"head": pa.array(inv[:len(heads)].astype(np.int32)),
                "rank": pa.array(rank.astype(np.int32)),
                "rule": pa.array(rule.astype(np.int32)),
                "nfacts": pa.array(np.full(len(heads), len(uniq), np.int32))}
        bidx = np.full(body.shape, -1, np.int64)
        bidx[used] = inv[len(heads):]
        for j in range(body.shape[1]):
            cols[f"b{j}"] = pa.array(bidx[:, j].astype(np.int32))
        facts = _pack(self._fact_table(self._by_relation(uniq)))
        return _SUPPORTS + struct.pack("<Q", len(facts)) + facts + _pack(pa.table(cols))

    def _by_relation(self, gids: np.ndarray) -> dict[str, np.ndarray]:
        """Sorted distinct gids -> rows per relation, in gid order."""
        code, rows = split_gid(gids)
        return {self.cp.names[c]: rows[code == c] for c in distinct(code).tolist()}

    def _fact_table(self, rows: dict[str, np.ndarray]) -> pa.Table:
        cp = self.cp
        if sum(len(r) for r in rows.values()) <= FEW:
            rels: list[str] = []
            args: list[tuple] = []
            for name, r in rows.items():
                rels += [name] * len(r)
                args += cp.values.decode_rows(cp.rels[name].cols[r])
            n = len(args)
            return table_of_tuples([0] * n, rels, args, [False] * n, self.width)
        parts = [table_of(cp.values, np.zeros(len(r), np.int32), name, False,
                          cp.rels[name].cols[r].astype(np.int64), self.width)
                 for name, r in rows.items()]
        return pa.concat_tables(parts)

    def _fact_blob(self, rows: dict[str, np.ndarray]) -> bytes:
        return _pack(self._fact_table(rows))

    def _decode_facts(self, blobs: Iterable[bytes]) -> dict[str, Any]:
        """Facts of blobs as rows of this region's ids per relation: (position of each row
        among the blobs' rows, ids)."""
        blobs = list(blobs)
        tables = [_unpack(b) for b in blobs]
        if not tables:
            return {}
        table = pa.concat_tables(tables)
        if not table.num_rows:
            return {}
        if table.num_rows <= FEW:
            return self._decode_few(table)
        ids = np.stack([ids_of(self.cp.values, table, i) for i in range(self.width)], axis=1) \
            if self.width else np.zeros((table.num_rows, 0), np.int64)
        d = pc.dictionary_encode(table.column("rel").combine_chunks())
        names, codes = d.dictionary.to_pylist(), d.indices.to_numpy()
        out: dict[str, Any] = {}
        for c, name in enumerate(names):
            at = np.flatnonzero(codes == c)
            if not len(at):
                continue
            rel = self.cp.rels.get(name)
            arity = rel.arity if rel is not None else int((ids[at] >= 0).sum(axis=1).max())
            cols = ids[at, :arity]
            out[name] = (at, cols)
        return out

    def _decode_few(self, table: pa.Table) -> dict[str, Any]:
        """``_decode_facts`` of a small table, through Python values."""
        by: dict[str, tuple[list[int], list[tuple]]] = {}
        for i, (rel, args) in enumerate(zip(table.column("rel").to_pylist(),
                                            tuples_of(table, self.width), strict=True)):
            at, rows = by.setdefault(rel, ([], []))
            at.append(i)
            rows.append(args)
        out: dict[str, Any] = {}
        for name, (at, rows) in by.items():
            rel = self.cp.rels.get(name)
            arity = rel.arity if rel is not None else len(rows[0])
            out[name] = (np.array(at, np.int64), self.cp.values.encode_rows(rows, arity))
        return out

    def _find(self, dead: list) -> dict[str, np.ndarray]:
        """Rows here (alive or not) of dead facts given as blobs or as fact keys."""
        blobs = [d for d in dead if isinstance(d, bytes)]
        keys = [d for d in dead if not isinstance(d, bytes)]
        got: dict[str, list[np.ndarray]] = {}
        decoded = {n: cols for n, (_at, cols) in self._decode_facts(blobs).items()}
        for name, cols in [*decoded.items(), *self._encode(keys).items()]:
            rel = self.cp.rels.get(name)
            if rel is None or rel.arity != cols.shape[1]:
                continue
            rows = rel.find(cols)
            got.setdefault(name, []).append(rows[rows >= 0])
        return {n: distinct(np.concatenate(p)) for n, p in got.items()}

    def _ids(self, name: str, rows: list[tuple], arity: int) -> np.ndarray:
        """Rows of Python values as ids: past a handful of rows through Arrow's typed
        columns, which cons a list column a position at a time (value by value, a
        best-routes path was a hash-map call per element: 3.6 s of 8 on three TataNld link
        downs and ups, against 1.2 s past ``FEW`` rows and 0.3 s past 16)."""
        if len(rows) <= 16:
            return self.cp.values.encode_rows(rows, arity)
        n = len(rows)
        table = table_of_tuples([0] * n, [name] * n, rows, [False] * n, arity)
        return np.stack([ids_of(self.cp.values, table, i) for i in range(arity)], axis=1) \
            if arity else np.zeros((n, 0), np.int64)

    def _encode(self, keys: list[FactKey]) -> dict[str, np.ndarray]:
        """Fact keys from the driver (base facts of the batch) as ids, per relation."""
        by: dict[str, list[tuple]] = {}
        for rel, row in keys:
            by.setdefault(rel, []).append(row)
        return {rel: self.cp.values.encode_rows(rows, len(rows[0])) for rel, rows in by.items()}

    # -- what the driver is told ---------------------------------------------------------
    def _flips(self) -> dict[FactKey, int]:
        """Facts shown or hidden since the last round, netted over the batch so far."""
        out: dict[FactKey, int] = {}
        for name, parts in self.ch.rows.items():
            if self.per_fact(name):
                continue  # mirrored: the per-fact side reports it
            rel = self.cp.rels[name]
            rows = np.concatenate(parts)
            net = rel.alive[rows].astype(np.int8) - rel.tbefore[rows].astype(np.int8)
            rep = self.reported.get(name)
            if rep is None or len(rep) < rel.n:
                grown = np.zeros(max(rel.n, 16), np.int8)
                if rep is not None:
                    grown[:len(rep)] = rep
                rep = self.reported[name] = grown
            diff = net - rep[rows]
            moved = np.flatnonzero(diff)
            if not len(moved):
                continue
            rep[rows[moved]] = net[moved]
            for row, n in zip(self.cp.values.decode_rows(rel.cols[rows[moved]]),
                              diff[moved].tolist(), strict=True):
                out[(name, row)] = n
        return out

    def _keys(self, gids: np.ndarray) -> list[FactKey]:
        code, rows = split_gid(gids)
        out: list[FactKey | None] = [None] * len(gids)
        for c in distinct(code).tolist():
            at = np.flatnonzero(code == c)
            name = self.cp.names[c]
            for i, row in zip(at.tolist(), self.cp.values.decode_rows(
                    self.cp.rels[name].cols[rows[at]]), strict=True):
                out[i] = (name, row)
        return out  # type: ignore[return-value]

    def _first_supports(self) -> dict[FactKey, Any]:
        """Each fact whose kept supports this round changed -> its first support (plan rule
        index, body keys), None when it is not shown."""
        sup = self.cp.supports
        if not sup.touched:
            return {}
        heads = distinct(np.concatenate(sup.touched))
        alive = self.cp.alive_gids(heads)
        first = np.where(alive, sup.first_of(heads), -1)
        keys = self._keys(heads)
        out: dict[FactKey, Any] = {}
        have = first >= 0
        bodies = sup.bodies(first[have]) if have.any() else np.zeros((0, sup.width), np.int64)
        rules = sup.rule[first[have]] if have.any() else _NONE
        j = 0
        for i, key in enumerate(keys):
            if not have[i]:
                out[key] = None
                continue
            b = bodies[j]
            out[key] = (int(self.to_plan[int(rules[j])]), tuple(self._keys(b[b >= 0])))
            j += 1
        return out
