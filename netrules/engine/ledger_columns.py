"""The base-fact ledger with its registers mirrored as arrays, for the columnar engine: a batch
of plain updates of facts seen before is applied as a few array operations, and what
appeared and vanished comes back as fact numbers, never as ``Fact`` objects.

Why: on a small graph the ledger was the largest single part of a big batch. TataNld's 100
links down is 200 updates; checking them, writing a register each (a ``_Write`` and its
stamp) and returning two sets of facts (hashed by a Python ``__hash__``), then looking each
fact's ids up again for the engine took 0.47 ms of a 1.5 ms batch.

Semantics are ``BaseLedger``'s, unchanged: this is the same ledger, and every path but one is
its own. The one added is ``plain``: a batch of plain updates, no soft state. A plain update
is newer than every write before it, so each register takes the batch's last update of it
(``BaseLedger._plain``'s argument), which an array pass finds. Its writes are kept as arrays
(``_pending``) and turned into ``_Write`` entries of ``regs`` only when something reads them
(a snapshot, ``present``, a timed batch): the engine alone never does.

Facts and registers are numbered once, append-only (``FactNumbers``); a copy of the ledger
shares the numbering, so an engine's table of ids by fact number stays valid for it.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from netrules.engine.columnar import kernels
from netrules.engine.ledger import _UNIQUE, BaseLedger, Update, _Write
from netrules.facts import Fact

__all__ = ["ColumnLedger", "FactNumbers"]

_NONE, _PLUS, _MINUS = 0, 1, 2  # a register's latest write: none, an insertion, a deletion


class FactNumbers:
    """Base facts and registers by number, append-only: a fact keeps its number for the
    ledger's life (and its copies'), whatever the registers hold."""

    def __init__(self) -> None:
        # relation -> args -> fact number: a batch's look-up reads the args tuple it holds and
        # compares it by identity, no (relation, args) key made and compared; on a cold cache
        # (a batch after other work) 124-138 µs for TataNld's 200 updates against 180-185
        self.of: dict[str, dict[tuple, int]] = {}
        self.facts: list[Fact] = []
        self.relations: list[str] = []  # relation code -> name
        self._rel_code: dict[str, int] = {}
        self.reg_of: dict[tuple, int] = {}  # register -> register number
        self.regs: list[tuple] = []  # register number -> register
        self.freg = np.zeros(0, np.int64)  # fact number -> register number
        self.frel = np.zeros(0, np.int32)  # fact number -> relation code

    def __len__(self) -> int:
        return len(self.facts)

    def __setstate__(self, state: dict) -> None:
        of = state.get("of") or {}
        if of and isinstance(next(iter(of)), tuple):  # (pickled keyed by (relation, args))
            by: dict[str, dict[tuple, int]] = {}
            for (rel, args), n in of.items():
                by.setdefault(rel, {})[args] = n
            state["of"] = by
        self.__dict__.update(state)

    def get(self, fact: Fact) -> int | None:
        """The fact's number, or None if it has none."""
        by = self.of.get(fact.relation)
        return None if by is None else by.get(fact.args)

    def add(self, fact: Fact, reg: tuple) -> int:
        """The number of ``fact`` (whose register is ``reg``), given one if new."""
        by = self.of.get(fact.relation)
        if by is None:
            by = self.of[fact.relation] = {}
        n = by.get(fact.args)
        if n is not None:
            return n
        n = by[fact.args] = len(self.facts)
        self.facts.append(fact)
        rn = self.reg_of.get(reg)
        if rn is None:
            rn = self.reg_of[reg] = len(self.regs)
            self.regs.append(reg)
        code = self._rel_code.get(fact.relation)
        if code is None:
            code = self._rel_code[fact.relation] = len(self.relations)
            self.relations.append(fact.relation)
        if n >= len(self.freg):
            cap = max(64, 2 * len(self.freg))
            self.freg = np.resize(self.freg, cap)
            self.frel = np.resize(self.frel, cap)
        self.freg[n], self.frel[n] = rn, code
        return n


class ColumnLedger(BaseLedger):
    """``BaseLedger`` whose registers are mirrored by number (module docstring)."""

    def __init__(self, keys: Any = None, lifetimes: Any = None) -> None:
        self.numbers = FactNumbers()
        self._pending: list[tuple[Any, ...]] = []  # plain batches' writes not in ``regs`` yet
        self._mirror_ok = False  # whether the arrays below hold every register's latest write
        self._sign = np.zeros(0, np.int8)  # register number -> _NONE / _PLUS / _MINUS
        self._fact = np.zeros(0, np.int64)  # ... the fact number of its latest write
        self._ins = np.zeros(0, bool)  # ... whether some insertion has reached it
        # registers holding a deletion never inserted (``pending_count``), while mirrored:
        # kept by each batch, not counted over every register each batch
        self._npend = 0
        super().__init__(keys, lifetimes)

    # -- ``regs``: the dict the rest of BaseLedger reads, brought up to date on reading ----
    @property  # type: ignore[override]
    def regs(self) -> dict[tuple, _Write]:
        if self._pending:
            self._fold()
        return self._regs

    @regs.setter
    def regs(self, value: dict[tuple, _Write]) -> None:
        self._pending = []
        self._regs = value
        self._mirror_ok = False  # the arrays are of the registers replaced: mirrored anew

    def _orphan_regs(self) -> set[tuple]:
        if self._pending:
            self._fold()
        return super()._orphan_regs()

    def _wrote(self) -> None:
        self._mirror_ok = False  # a write by ``BaseLedger``'s own paths: mirrored anew

    def _fold(self) -> None:
        """Write the plain batches' pending writes into ``regs`` as ``_Write`` entries, in
        batch order, keeping the pending-deletion set as every write does."""
        pending, self._pending = self._pending, []
        regs, orphans = self._regs, super()._orphan_regs()
        names, facts = self.numbers.regs, self.numbers.facts
        make = tuple.__new__
        for clock, rns, fns, minus, arrivals, ins in pending:
            for rn, fn, neg, n, held in zip(rns.tolist(), fns.tolist(), minus.tolist(),
                                            arrivals.tolist(), ins.tolist(), strict=True):
                reg = names[rn]
                regs[reg] = make(_Write, (((clock, n, "", 0), neg, _UNIQUE),
                                          "-" if neg else "+", facts[fn], held))
                if neg and not held:
                    orphans.add(reg)
                elif orphans:
                    orphans.discard(reg)

    def _mirror(self) -> None:
        """Rebuild the arrays from ``regs`` (after a timed batch, a restore)."""
        regs = self.regs
        n = self.numbers
        sign = np.zeros(len(n.regs) + len(regs), np.int8)
        fact = np.zeros(len(sign), np.int64)
        ins = np.zeros(len(sign), bool)
        for reg, w in regs.items():
            fn = n.add(w.fact, reg)
            rn = n.reg_of[reg]
            sign[rn] = _PLUS if w.sign == "+" else _MINUS
            fact[rn], ins[rn] = fn, w.inserted
        self._sign, self._fact, self._ins = sign, fact, ins
        self._npend = int(np.count_nonzero((sign == _MINUS) & ~ins))
        self._mirror_ok = True

    def number(self, fact: Fact) -> int:
        """The fact's number (given one if new)."""
        n = self.numbers.get(fact)
        return n if n is not None else self.numbers.add(fact, self._reg(fact))

    # -- the array path ----------------------------------------------------------------------
    def known(self, batch: list[Update]) -> tuple[np.ndarray, np.ndarray] | None:
        """(fact numbers, signs as the bytes ``+``/``-``) of a batch of plain
        ``(sign, fact)`` updates of numbered facts, or None (a timed, new or malformed
        update: the caller checks the batch and goes the general way). The checks are
        Python's own (``min`` of a list, ``str.strip``): each kind of NumPy call a batch
        makes first costs it 20-80 µs after other work has run (docs/engine.md, "Cold
        batches")."""
        of = self.numbers.of
        nums = []
        try:
            for _, f in batch:
                by = of.get(f.relation)
                nums.append(-1 if by is None else by.get(f.args, -1))
            signs = "".join([s for s, _ in batch])
        except (ValueError, TypeError, AttributeError):
            return None
        if len(signs) != len(nums) or signs.strip("+-") or (nums and min(nums) < 0):
            return None
        return np.array(nums, dtype=np.int64), np.frombuffer(signs.encode(), np.uint8)

    def plain(self, fns: np.ndarray, signs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Apply plain updates given by ``known``; returns the fact numbers that appeared and
        that vanished (``BaseLedger._plain``'s rules over arrays). Soft state is not served
        here: the caller asks ``lifetimes`` first."""
        if not self._mirror_ok:
            self._mirror()
        n = self.numbers
        need = len(n.regs)
        if need > len(self._sign):
            cap = max(need, 2 * len(self._sign), 64)
            self._sign = np.concatenate([self._sign, np.zeros(cap - len(self._sign), np.int8)])
            self._fact = np.concatenate([self._fact, np.zeros(cap - len(self._fact), np.int64)])
            self._ins = np.concatenate([self._ins, np.zeros(cap - len(self._ins), bool)])
        m = len(fns)
        appeared, vanished, r, f, neg, last, ins, pend = kernels.ledger_plain(
            fns, signs, n.freg, self._sign, self._fact, self._ins, np.int8(_PLUS),
            np.int8(_MINUS))
        self._npend += pend
        self._pending.append((self.clock, r, f, neg, self.arrivals + 1 + last, ins))
        self.arrivals += m
        self.last = Counter()
        return appeared, vanished

    def pending_count(self) -> int:
        if self._pending and self._mirror_ok:
            return self._npend
        return super().pending_count()

    # -- copies and pickles --------------------------------------------------------------------
    def copy(self) -> ColumnLedger:
        other = ColumnLedger(self.keys, self.lifetimes)
        other.numbers = self.numbers  # append-only: shared
        other._regs, other._pending = dict(self._regs), list(self._pending)
        other._orphans = set(self._orphan_regs()) if not self._pending else None
        other._sign, other._fact, other._ins = (self._sign.copy(), self._fact.copy(),
                                                self._ins.copy())
        other._mirror_ok, other._npend = self._mirror_ok, self._npend
        other.clock, other.arrivals = self.clock, self.arrivals
        return other

    def __getstate__(self) -> dict:
        if self._pending:
            self._fold()
        return super().__getstate__()

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if "_npend" not in state:  # (pickled before the count was kept): mirrored anew
            self._npend, self._mirror_ok = 0, False

    @classmethod
    def of(cls, ledger: BaseLedger) -> ColumnLedger:
        """``ledger``'s state in a ColumnLedger (a state made before the columnar ledger)."""
        out = cls(ledger.keys, ledger.lifetimes)
        out.regs = dict(ledger.regs)
        out.clock, out.arrivals, out.last = ledger.clock, ledger.arrivals, Counter(ledger.last)
        out._orphans = None
        return out
