"""Base facts as network state: a last-writer-wins register per fact (per key, where the base
relation declares ``keys``), so duplicated and reordered events change nothing.

A collector's ``+link(@a,b,1)`` at time t says the link is up from t on; a restarted
collector re-announces it and two collectors may both see it. Counting insertions (a multiset)
would keep a link up after ``+ + -``; a register keeps whatever the *latest* event says.

Each update carries a stamp, compared as ``(time, arrival, source, seq)``:

* a timed update ``(sign, fact, time, seq[, source])`` gets ``(time, 0, source, seq)``: its
  place depends only on the event, so any delivery order and any duplication of a stream give
  the same state (the register is a commutative, idempotent merge);
* a plain ``(sign, fact)`` has no time: arrival order is its time. It gets
  ``(clock, n, "", 0)`` with ``clock`` the latest time seen and ``n`` a counter of plain
  updates, so a later plain update in the stream wins, also over a timed one at the same time.

Ties on the full stamp (one event with two meanings) go to the deletion, then to the larger
fact by ``sort_key``: corrupt input still gives one answer. An update whose stamp is not
newer than its register's is *stale*: ``duplicates`` (the same write again) and ``superseded``
(an older write) count them per batch.

Keys: with ``materialize(link, ..., keys(1,2))`` the register is the key's values (the
location argument always among them: every node holds its own table); a newer ``+link(@a,b,7)``
replaces ``link(@a,b,1)``, and a newer deletion of either empties the key.

Soft state: a base relation declared with a finite lifetime
(``materialize(link, 30, infinity, keys(1,2))``) holds a fact only while its latest insertion
is younger than the lifetime on the ledger's clock, the latest event time seen: an insertion
at t lasts until t + lifetime unless a newer insertion refreshes it. Expiry is a deletion like
any other (``apply`` reports the facts that expired as vanished) and depends only on the
events and the clock, so a replay expires the same facts at the same batches.

*Pending deletions* are registers whose latest write is a deletion of something never
inserted (no insertion, older or newer, has reached the register): the orphans a collector
should look at. A deletion that an older insertion arrives after still wins (it is newer) and
the insertion counts as superseded. ``snapshot``/``restore`` round-trip the whole state, which
is what restart needs (``pipeline.batch.recover``).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from operator import itemgetter
from typing import NamedTuple

from netrules.facts import Fact, sort_key

__all__ = ["BaseLedger", "Update", "Stamp"]

Stamp = tuple[float, int, str, int]
Update = tuple  # (sign, fact) | (sign, fact, time, seq) | (sign, fact, time, seq, source)
_MISSING = object()  # a relation whose register getter is not made yet
_JSON = json.JSONEncoder(separators=(",", ":"))


class _Tie:
    """A fact's place among writes whose stamp and sign tie: its ``sort_key``, computed only
    when a comparison reaches it (a tie is rare; the key was a third of a batch's cost)."""

    __slots__ = ("fact", "_key")

    def __init__(self, fact: Fact) -> None:
        self.fact = fact
        self._key: tuple | None = None

    def key(self) -> tuple:
        if self._key is None:
            self._key = sort_key((self.fact.relation, self.fact.args))
        return self._key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Tie) and self.key() == other.key()

    def __lt__(self, other: _Tie) -> bool:
        return self.key() < other.key()

    def __le__(self, other: _Tie) -> bool:
        return self.key() <= other.key()

    def __gt__(self, other: _Tie) -> bool:
        return self.key() > other.key()

    def __ge__(self, other: _Tie) -> bool:
        return self.key() >= other.key()

    def __hash__(self) -> int:
        return hash(self.key())

    def __getstate__(self) -> Fact:
        return self.fact

    def __setstate__(self, fact: Fact) -> None:
        self.fact, self._key = fact, None


class _Unique:
    """The fact-order slot of a plain update's write. A plain stamp carries an arrival number
    no other write has (timed stamps carry 0), so no comparison of two writes ever reaches
    this slot: the ``_Tie`` made per plain update was a tenth of the ledger's time."""

    __slots__ = ()

    def __reduce__(self) -> str:
        return "_UNIQUE"  # unpickled as the one instance


_UNIQUE = _Unique()


class _Write(NamedTuple):
    """A register's latest write (a named tuple: made once per update, and a frozen
    dataclass's ``__init__`` was a third of the ledger's time)."""

    order: tuple  # (stamp, deletion first, fact order): the register keeps the largest
    sign: str
    fact: Fact
    inserted: bool  # some insertion, kept or superseded, has reached this register


class BaseLedger:
    """The current base facts, one last-writer-wins register per fact or key."""

    def __init__(self, keys: Mapping[str, tuple[int, ...]] | None = None,
                 lifetimes: Mapping[str, float] | None = None) -> None:
        """``keys``: relation -> 0-based argument positions forming its key (see ``for_plan``);
        a relation not named is keyed by all its arguments. ``lifetimes``: relation -> seconds
        an insertion lasts (soft state); a relation not named lasts until deleted."""
        self.keys: dict[str, tuple[int, ...]] = dict(keys or {})
        self.lifetimes: dict[str, float] = dict(lifetimes or {})
        self.regs: dict[tuple, _Write] = {}
        self._regf: dict[str, Callable[[tuple], tuple] | None] = {}
        self._picks: dict[str, tuple[int, Callable[[tuple], tuple]] | None] = {}
        self.clock = 0.0
        self.arrivals = 0
        self.last = Counter[str]()  # the last batch's stale updates: duplicates, superseded
        self._orphans: set[tuple] | None = set()  # registers of pending deletions

    @classmethod
    def for_plan(cls, plan: object) -> BaseLedger:
        """A ledger keyed as ``plan`` declares its base relations (``materialize ... keys``),
        the location argument always part of a key."""
        keys: dict[str, tuple[int, ...]] = {}
        derived = getattr(plan, "derived", ())
        for rel, ks in getattr(plan, "keys", {}).items():
            if rel in derived:
                continue
            pos = {k - 1 for k in ks}
            loc = getattr(plan, "locspec", {}).get(rel)
            if loc is not None:
                pos.add(loc)
            keys[rel] = tuple(sorted(pos))
        program = getattr(plan, "program", None)
        lifetimes = {m.name: m.lifetime for m in getattr(program, "materialized", ())
                     if m.lifetime != float("inf") and m.name not in derived}
        return cls(keys, lifetimes)

    # -- reading -------------------------------------------------------------------------
    def _reg(self, fact: Fact) -> tuple:
        rel = fact.relation
        try:
            get = self._regf[rel]
        except KeyError:
            get = self._regf[rel] = self._reg_of(rel)
        return (rel, fact.args) if get is None else get(fact.args)

    def _reg_of(self, rel: str) -> Callable[[tuple], tuple] | None:
        """The register of a fact of ``rel`` from its arguments (None: all of them), made
        once per relation: the register was a generator and a tuple per update."""
        pos = self.keys.get(rel)
        if pos is None:
            return None
        top = max(pos, default=-1)
        pick = itemgetter(*pos) if len(pos) > 1 else (lambda a: (a[pos[0]],)) if pos else (
            lambda a: ())

        def reg(args: tuple) -> tuple:
            return (rel, args) if top >= len(args) else (rel, pick(args))
        return reg

    def _pick_of(self, rel: str) -> tuple[int, Callable[[tuple], tuple]] | None:
        """``_reg_of``'s parts for ``_run`` to build a register inline: (the highest key
        position, a getter of the key's values), None for a register of all arguments."""
        pos = self.keys.get(rel)
        if pos is None:
            return None
        pick = itemgetter(*pos) if len(pos) > 1 else (lambda a: (a[pos[0]],)) if pos else (
            lambda a: ())
        return max(pos, default=-1), pick

    def _live(self, w: _Write | None, clock: float) -> Fact | None:
        """The fact a register holds at ``clock`` (None: deleted, or expired soft state)."""
        if w is None or w.sign != "+":
            return None
        life = self.lifetimes.get(w.fact.relation)
        if life is not None and w.order[0][0] + life <= clock:
            return None
        return w.fact

    def present(self) -> set[Fact]:
        return {f for w in self.regs.values() if (f := self._live(w, self.clock)) is not None}

    def __len__(self) -> int:
        """How many base facts are present."""
        return len(self.present()) if self.lifetimes else sum(
            1 for w in self.regs.values() if w.sign == "+")

    def holds(self, fact: Fact) -> bool:
        return self._live(self.regs.get(self._reg(fact)), self.clock) == fact

    @property
    def balance(self) -> dict[Fact, int]:
        """The counting ledger's view, for callers written against it: 1 per present fact,
        -1 per pending deletion (read-only; the registers are the state)."""
        out = {f: -1 for f in self.pending_deletions()}
        out.update({f: 1 for f in self.present()})
        return out

    def pending_deletions(self) -> dict[Fact, int]:
        """Deletions of facts no insertion has reached (orphans), each counted once."""
        regs = self.regs
        return {regs[reg].fact: 1 for reg in self._orphan_regs()}

    def pending_count(self) -> int:
        """How many pending deletions there are (every batch reports it)."""
        return len(self._orphan_regs())

    def _orphan_regs(self) -> set[tuple]:
        """The registers whose latest write is a pending deletion, kept up to date by every
        write: every batch reports their number, and a scan of all registers for it cost a
        backbone's single-link batch 0.3 ms. Rebuilt once where a restored or unpickled
        ledger has none."""
        orphans = self.__dict__.get("_orphans")
        if orphans is None:
            orphans = self._orphans = {reg for reg, w in self.regs.items()
                                       if w.sign == "-" and not w.inserted}
        return orphans

    # -- writing -------------------------------------------------------------------------
    def _order(self, item: Update) -> tuple[str, Fact, tuple]:
        sign, fact = item[0], item[1]
        if len(item) > 2 and item[2] is not None:
            t = float(item[2])
            seq = int(item[3]) if len(item) > 3 and item[3] is not None else 0
            src = str(item[4]) if len(item) > 4 and item[4] is not None else ""
            self.clock = max(self.clock, t)
            stamp: Stamp = (t, 0, src, seq)
        else:
            self.arrivals += 1
            stamp = (self.clock, self.arrivals, "", 0)
        return sign, fact, (stamp, sign == "-", _Tie(fact))

    def apply(self, batch: Iterable[Update]) -> tuple[set[Fact], set[Fact]]:
        """Apply updates; return the base facts that appeared and that disappeared."""
        return self._run(batch, write=True)

    def preview(self, batch: Iterable[Update]) -> tuple[set[Fact], set[Fact]]:
        """What ``apply`` would return, leaving the ledger as it is."""
        saved = (self.clock, self.arrivals, Counter(self.last))
        try:
            return self._run(batch, write=False)
        finally:
            self.clock, self.arrivals, self.last = saved

    def _run(self, batch: Iterable[Update], *, write: bool) -> tuple[set[Fact], set[Fact]]:
        """The registers a batch writes, and what appeared and vanished.

        The loop is the per-update fixed cost of every batch (a 224-link partition spent
        0.4 ms here, a sixth of its batch), so it keeps to locals: the plain case is inlined,
        the register is built inline from a per-relation key getter, a write is made by
        ``tuple.__new__`` (a named tuple's own constructor is a Python frame) and a fact is
        compared with another only when both exist (``Fact.__eq__`` is a Python frame too)."""
        batch = batch if isinstance(batch, list) else list(batch)
        if not self.lifetimes:
            done = self._plain(batch, write)
            if done is not None:
                return done
        stale: Counter[str] = Counter()
        start = clock = self.clock
        arrivals = self.arrivals
        regs, order_of, live = self.regs, self._order, self._live
        picks = self.__dict__.setdefault("_picks", {})  # (a ledger pickled before it had one)
        soft = bool(self.lifetimes)
        write_of, unique, missing = tuple.__new__, _UNIQUE, _MISSING
        now: dict[tuple, _Write] = {}
        try:
            for item in batch:
                if len(item) > 2 and item[2] is not None:
                    sign, fact, order = order_of(item)
                    clock = self.clock
                else:  # ``_order``'s plain case, inline: most updates of a batch take it
                    sign, fact = item[0], item[1]
                    arrivals += 1
                    order = ((clock, arrivals, "", 0), sign == "-", unique)
                rel, args = fact.relation, fact.args
                spec = picks.get(rel, missing)
                if spec is missing:
                    spec = picks[rel] = self._pick_of(rel)
                reg = (rel, args) if spec is None or spec[0] >= len(args) else (
                    rel, spec[1](args))
                old = now.get(reg)
                if old is None:
                    old = regs.get(reg)
                seen = (old is not None and old.inserted) or sign == "+"
                if old is not None and order <= old.order:
                    stale["duplicates" if order == old.order else "superseded"] += 1
                    if seen != old.inserted:
                        now[reg] = write_of(_Write, (old.order, old.sign, old.fact, True))
                    continue
                now[reg] = write_of(_Write, (order, sign, fact, seen))
        finally:
            self.arrivals = arrivals
        if self.lifetimes and self.clock > start:  # soft state the clock moved past expires
            for reg, w in self.regs.items():
                if reg not in now and w.fact.relation in self.lifetimes:
                    now[reg] = w
        appeared, vanished = set(), set()
        clock = self.clock
        orphans = self._orphan_regs() if write else None
        for reg, w in now.items():
            if orphans is not None:
                if w.sign == "-" and not w.inserted:
                    orphans.add(reg)
                elif orphans:
                    orphans.discard(reg)
            # what the register held before the batch: ``regs`` is written only below
            old = regs.get(reg)
            was = live(old, start) if soft else (
                old.fact if old is not None and old.sign == "+" else None)
            is_ = live(w, clock) if soft else (w.fact if w.sign == "+" else None)
            if was is is_:
                continue
            if was is None:
                appeared.add(is_)
            elif is_ is None:
                vanished.add(was)
            elif was != is_:
                vanished.add(was)
                appeared.add(is_)
        if write:
            self.regs.update(now)
            self._wrote()
        self.last = stale
        return appeared, vanished

    def _plain(self, batch: list[Update], write: bool
               ) -> tuple[set[Fact], set[Fact]] | None:
        """``_run`` for a batch of plain updates and a ledger of no soft state (None if the
        batch holds a timed update): its loops without their comparisons. A plain update's
        stamp is newer than any write before it (its time is the clock, the latest seen, and
        its arrival number is unique and larger), so each register takes the batch's last
        update of it. Whether some insertion reached a register matters only where the last
        update deletes what the register did not hold inserted (a pending deletion, rare),
        so the batch is searched for one only then. One pass, then one per register: a
        200-link batch 636 -> 299 µs; then 204 -> 180 µs (TataNld's 100 links down, the
        ledger alone) by keeping a relation's key getter across the batch and carrying
        (place, sign, fact) instead of unpacking each update again."""
        last: dict[tuple, tuple[int, str, Fact]] = {}
        picks = self.__dict__.setdefault("_picks", {})  # (a ledger pickled before it had one)
        missing = _MISSING
        rel_was, spec = None, None  # a batch is mostly of one relation: its getter kept
        for i, item in enumerate(batch):
            if len(item) > 2 and item[2] is not None:
                return None
            fact = item[1]
            rel, args = fact.relation, fact.args
            if rel is not rel_was:
                spec = picks.get(rel, missing)
                if spec is missing:
                    spec = picks[rel] = self._pick_of(rel)
                rel_was = rel
            last[(rel, args) if spec is None or spec[0] >= len(args)
                 else (rel, spec[1](args))] = (i, item[0], fact)
        regs, clock, base = self.regs, self.clock, self.arrivals + 1
        write_of, unique = tuple.__new__, _UNIQUE
        orphans = self._orphan_regs() if write else None
        now: dict[tuple, _Write] = {}
        appeared, vanished = set(), set()
        unheld: list[tuple] = []  # deleted by the batch, not held inserted before it
        get = regs.get
        for reg, (i, sign, fact) in last.items():
            old = get(reg)
            if sign == "+":
                now[reg] = write_of(_Write, (((clock, base + i, "", 0), False, unique), sign,
                                             fact, True))
                if orphans:
                    orphans.discard(reg)
                if old is None or old.sign != "+":
                    appeared.add(fact)
                elif (was := old.fact) is not fact and was != fact:
                    vanished.add(was)
                    appeared.add(fact)
                continue
            held = old is not None and old.inserted
            now[reg] = write_of(_Write, (((clock, base + i, "", 0), True, unique), sign, fact,
                                         held))
            if not held:
                unheld.append(reg)
            elif orphans:
                orphans.discard(reg)
            if old is not None and old.sign == "+":
                vanished.add(old.fact)
        if unheld:
            self._inserted_by(batch, unheld, now, orphans)
        self.arrivals += len(batch)
        if write:
            regs.update(now)
            self._wrote()
        self.last = Counter()
        return appeared, vanished

    def _wrote(self) -> None:
        """Called after a batch wrote ``regs`` (a subclass mirroring them hears of it)."""

    def _inserted_by(self, batch: list[Update], unheld: list[tuple],
                     now: dict[tuple, _Write], orphans: set[tuple] | None) -> None:
        """Mark inserted the registers of ``unheld`` that an insertion of the batch reached;
        the others are pending deletions."""
        want = set(unheld)
        for sign, fact, *_ in batch:
            if sign != "+":
                continue
            reg = self._reg(fact)  # (a rare path: the register by the shared getter)
            if reg in want:
                want.discard(reg)
                now[reg] = now[reg]._replace(inserted=True)
        if orphans is not None:
            orphans.update(want)
            orphans.difference_update(set(unheld) - want)

    # -- restart -------------------------------------------------------------------------
    def snapshot(self) -> dict:
        """The whole state as JSON-ready data; ``restore`` rebuilds it exactly.

        The pipeline takes one after every batch, and a batch writes few registers: each
        register's entry and sort key are kept with the write they were made from and made
        again only for a new write (americas' 2,948 links: 50-74 ms a batch, most of it
        ``sort_key`` and ``to_json`` of registers the batch never touched)."""
        regs = [json.loads(text) for text in self._entry_texts()]
        return {"clock": self.clock, "arrivals": self.arrivals, "regs": regs}

    def snapshot_json(self) -> str:
        """``json.dumps(self.snapshot())`` (compact separators), joined from each register's
        kept text: what the pipeline stores after every batch."""
        head = _JSON.encode({"clock": self.clock, "arrivals": self.arrivals})
        return f'{head[:-1]},"regs":[{",".join(self._entry_texts())}]}}'

    def _entry_texts(self) -> list[str]:
        """Each register's snapshot entry as JSON text, in ``sort_key`` order of its fact;
        kept with the write it was made from (``_entries``)."""
        cache = self.__dict__.get("_entries") or {}
        made: dict[tuple, tuple[_Write, tuple, str]] = {}
        for reg, w in self.regs.items():
            hit = cache.get(reg)
            if hit is None or hit[0] is not w:
                (t, n, src, seq), _, _ = w.order
                f = w.fact
                hit = (w, sort_key((f.relation, f.args)),
                       _JSON.encode([f.to_json(), w.sign, t, n, src, seq, int(w.inserted)]))
            made[reg] = hit
        self._entries = made
        return [text for _, _, text in sorted(made.values(), key=itemgetter(1))]

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_entries", None)  # a cache of ``snapshot``'s, remade on demand
        return state

    def restore(self, snap: Mapping) -> None:
        """Replace the state by a ``snapshot``'s."""
        self.clock = float(snap.get("clock", 0.0))
        self.arrivals = int(snap.get("arrivals", 0))
        self.regs = {}
        self._orphans = None
        for fj, sign, t, n, src, seq, inserted in snap.get("regs", []):
            f = Fact.from_json(fj)
            order = ((float(t), int(n), str(src), int(seq)), sign == "-", _Tie(f))
            self.regs[self._reg(f)] = _Write(order, sign, f, bool(inserted))
        self._wrote()

    def copy(self) -> BaseLedger:
        """An independent ledger in the same state (to roll back a failed batch)."""
        other = BaseLedger(self.keys, self.lifetimes)
        other.regs, other.clock, other.arrivals = dict(self.regs), self.clock, self.arrivals
        other._orphans = set(self._orphan_regs())
        return other
