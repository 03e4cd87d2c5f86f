"""One micro-batch end to end: events -> engine -> alerts -> BatchRecord -> store, in one commit.

Both drivers (the Spark Structured Streaming one and ``--once``) call :meth:`BatchProcessor.process`
with a batch id and the batch's events; everything that makes a restart exact lives here:

* a batch id at or below the store's last one was already committed: it is skipped, so a
  micro-batch Spark replays after a crash is not applied twice;
* events the store already applied (by id) are dropped, so a log replayed under another
  checkpoint or batching adds nothing;
* the base-fact ledger's state (one last-writer-wins register per fact, with its event stamp:
  ``BaseLedger.snapshot``) rides in the batch's stats, committed in the same transaction as
  the views, so :meth:`recover` rebuilds exactly the engine state the last committed batch
  left, tombstones included (an older event arriving after a restart still loses);
* an engine with a clock of its own (``clocked.ClockedEngine``, for programs with event
  rules) adds its ``checkpoint()`` to the same stats, and ``recover`` hands it back.

Caveat: derivations are one kept support per fact and, after a restart, may name a different
(equally valid) support than an uninterrupted run would; views, change log and alerts are
identical.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from netrules import settings
from netrules.alerts import AlertConfig, AlertRules, view_has_from_store
from netrules.alerts.rules import Alert
from netrules.engine.ledger import BaseLedger
from netrules.engine.strategies.base import Delta, Derivation
from netrules.errors import EventLogError
from netrules.eventlog import Event
from netrules.facts import Fact, Value
from netrules.lang import ast
from netrules.pipeline import bulk
from netrules.plan import Plan
from netrules.store import BatchRecord, DerivationTexts, Store
from netrules.store.base import fact_from_json_args

__all__ = ["EngineLike", "EngineFactory", "BatchProcessor", "alert_config_for",
           "engine_factory", "ledger_json"]


class EngineLike(Protocol):
    """The façade both engines offer (netrules.engine.engine.Engine and the Spark one)."""

    def apply(self, batch: Iterable[tuple]) -> Delta: ...
    def load(self, facts: Iterable[Fact]) -> Delta: ...
    def explain(self, fact: Fact) -> Derivation | None: ...
    def query(self, atom: ast.Atom) -> list[Fact]: ...
    def pending_deletions(self) -> dict[Fact, int]: ...


EngineFactory = Callable[[Plan], EngineLike]


def engine_factory(kind: str, strategy: str, spark_master: str | None = None, *,
                   state: str = settings.get("state").default) -> EngineFactory:
    """``reference``: the in-process engine; ``spark``: the engine mirroring views in Spark
    (``state`` ``driver``) or keeping them in Spark executors, region by region (``spark``:
    PSN over regions, so ``strategy`` must be auto or psn)."""
    from netrules.errors import EngineError

    if state not in ("driver", "spark"):
        raise EngineError(f"unknown --state {state!r}; use driver or spark")
    if kind == "reference":
        if state != "driver":
            raise EngineError(f"--state {state} keeps the views in Spark executors; it needs "
                              "--engine spark (the reference engine keeps them in process)")
        from netrules.engine.engine import Engine

        return lambda plan: Engine(plan, strategy)
    if kind == "spark" and state == "spark":
        if strategy not in ("auto", "psn"):
            raise EngineError(f"--state spark maintains views with PSN over regions; --strategy "
                              f"{strategy} needs --state driver")

        def resident(plan: Plan) -> EngineLike:
            from netrules.engine.session import get_spark
            from netrules.engine.spark.resident import ResidentEngine

            # supports reported per batch: the derivations the store keeps come from them
            return ResidentEngine(plan, spark=get_spark(spark_master),
                                  report_supports=True)  # type: ignore[return-value]
        return resident
    if kind == "spark":
        def make(plan: Plan) -> EngineLike:
            from netrules.engine.session import get_spark
            from netrules.engine.spark.engine import SparkEngine

            return SparkEngine(plan, strategy, spark=get_spark(spark_master))
        return make
    raise EngineError(f"unknown engine {kind!r}; use reference or spark")


def alert_config_for(plan: Plan, *, route_relation: str = "bestPath",
                     reach_relation: str = "reachable", loop_relation: str = "loop",
                     pattern_relations: Iterable[str] = ("suspect", "detectable"),
                     monitored: frozenset[tuple[Value, Value]] | None = None,
                     overrides: Mapping[str, Any] | None = None) -> AlertConfig:
    """The alert rules for the relations ``plan`` actually has.

    ``monitored`` None means every reachability pair (the default, sized for the small and
    medium networks path-vector programs run on); ``overrides`` is an AlertConfig mapping that
    replaces this guess entirely.
    """
    if overrides:
        return AlertConfig.from_dict(overrides)
    rels = set(plan.arity)
    return AlertConfig(
        route_relations={route_relation: (0, 1)} if route_relation in rels else {},
        reach_relation=reach_relation if reach_relation in rels else None,
        monitored_pairs=monitored,
        loop_relations=(loop_relation,) if loop_relation in rels else (),
        pattern_relations=tuple(sorted(r for r in pattern_relations if r in rels)),
    )


def _ledger_of(engine: EngineLike) -> BaseLedger | None:
    ledger = getattr(getattr(engine, "state", None), "ledger", None)
    return ledger if ledger is not None else getattr(engine, "ledger", None)


def ledger_json(engine: EngineLike) -> str:
    """The engine's base-fact ledger as ``BaseLedger.snapshot`` JSON text (what a restart
    needs), joined from each register's kept text."""
    ledger = _ledger_of(engine)
    return ledger.snapshot_json() if ledger is not None else "{}"


def _pending(engine: EngineLike) -> list[tuple[Fact, int]]:
    return sorted(engine.pending_deletions().items(), key=lambda x: x[0].key())


def _ledger_json(items: list[tuple[Fact, int]]) -> list[list]:
    return [[f.to_json(), n] for f, n in items]


@dataclass
class Recovery:
    """What :meth:`BatchProcessor.recover` rebuilt."""

    last_batch: int | None
    base_facts: int
    ledger_entries: int
    supports: int
    seconds: float


class BatchProcessor:
    """Applies batches to one engine and writes each, atomically, to one store.

    ``on_batch(record, written)`` is called after every batch (the CLI prints alerts there);
    ``notifier(raised, cleared, batch_id)`` posts alerts (the webhook). Events the program
    cannot take (unknown relation, wrong arity) are counted in the batch stats, and the first
    of each kind is kept in ``ignored_at`` (kind -> (where, why)); with ``strict`` the first
    one is an error and its batch is not applied.
    """

    strict = False

    def __init__(self, plan: Plan, engine: EngineLike, store: Store, rules: AlertRules, *,
                 link_relation: str = "link", max_derivations: int = 20_000,
                 on_batch: Callable[[BatchRecord, bool], None] | None = None,
                 notifier: Callable[[list[Alert], list[str], int], Any] | None = None) -> None:
        self.plan = plan
        self.engine = engine
        self.store = store
        self.rules = rules
        self.link_relation = link_relation
        self.max_derivations = max_derivations
        self.on_batch = on_batch
        self.notifier = notifier
        self.keep = plan.visible | plan.base
        self.last_batch: int | None = None
        self.ignored_at: dict[str, tuple[str, str]] = {}
        self.last_time = 0.0
        self.ledger: list[tuple[Fact, int]] = []  # pending deletions, as last published
        # the store's one kept support per fact, mirrored so a removal finds the facts whose
        # support it breaks: by Fact, or on the columnar path by (relation, args text)
        self.support: dict[Hashable, tuple[str, tuple[Hashable, ...]]] = {}
        self.users: dict[Hashable, set[Hashable]] = {}
        self.links: set[tuple[Value, Value]] = set()
        self.topo_pairs: set[tuple[str, str]] = set()
        self.seen_links: set[tuple[Value, Value]] = set()
        # events fed from outside that the engine takes (P2's reading): relation -> arity
        self.accepts: dict[str, int] = dict(getattr(engine, "accepts", {}))
        # rules whose facts keep no supports, so the store's derivation is a witness found
        # in the view: aggregates, and (columnar path) plain rules of an iterated stratum
        self._agg_rules: dict[str, list[ast.Rule]] = {}
        for r in plan.rules:
            if r.head.aggregate():
                self._agg_rules.setdefault(r.head.relation, []).append(r)
        self._iterated_rels = {r.head.relation for s in plan.strata if s.iterated
                               for r in s.rules if not r.head.aggregate()}

    # -- restart --------------------------------------------------------------------------
    def recover(self, progress: Callable[[str], None] | None = None) -> Recovery:
        """Rebuild the engine from the store: its base facts, then the ledger's non-unit
        balances recorded with the last committed batch. Call before the first batch."""
        t0 = time.perf_counter()
        say = progress or (lambda _msg: None)
        self.last_batch = self.store.last_batch_id()
        base: list[Fact] = []
        for rel in sorted(self.plan.base):
            base.extend(self.store.read_view(rel))
        say(f"loading {len(base)} base facts")
        if base:
            self.engine.load(base)
        snap: dict[str, Any] = {}
        clock: dict[str, Any] = {}
        if self.last_batch is not None:
            last = self.store.batches(limit=1)
            if last:
                self.last_time = last[-1].time
                stored = self.store.ledger()  # (older stores: in the last batch's stats)
                snap = stored if stored is not None else last[-1].stats.get("ledger") or {}
                clock = last[-1].stats.get("clock") or {}
        ledger = _ledger_of(self.engine)
        if isinstance(snap, dict) and snap and ledger is not None:
            ledger.restore(snap)  # the stored base facts are exactly its present ones
        extras = snap.get("regs", []) if isinstance(snap, dict) else []
        if clock and hasattr(self.engine, "resume"):
            self.engine.resume(clock)
        self.ledger = _pending(self.engine)
        say("indexing stored derivations")
        for rel in sorted(self.plan.visible) if self._per_fact_derivations() else ():
            for f in self.store.read_view(rel):
                ds = self.store.derivations(f)
                if ds:
                    self._set_support(f, ds[0][0], tuple(ds[0][1]))
        self.links = {(f.args[0], f.args[1]) for f in self.store.read_view(self.link_relation)
                      if len(f.args) >= 2} if self.link_relation in self.plan.arity else set()
        if hasattr(self.engine, "links"):  # announced, not stored: the engine knows them
            self.links = self.engine.links()
        _, topo_links = self.store.topology()
        self.topo_pairs = {(link.src, link.dst) for link in topo_links}
        self.seen_links = set(self.links) | set(self.topo_pairs)
        return Recovery(self.last_batch, len(base), len(extras), len(self.support),
                        time.perf_counter() - t0)

    def _per_fact_derivations(self) -> bool:
        """Does this engine's delta come as Fact sets (so stale stored supports are found
        through the mirror), rather than columns (whose supports say what changed)?"""
        state = getattr(self.engine, "state", None)
        return not (state is not None and "program" in getattr(state, "extra", {}))

    # -- one batch --------------------------------------------------------------------------
    def process(self, batch_id: int, events: list[Event], *,
                bad_lines: Iterable[str] = (), extra_stats: Mapping[str, Any] | None = None,
                until: float | None = None) -> BatchRecord | None:
        """Apply and commit one batch; None when the store already has it (a replay).
        ``until`` (no events; an engine with a clock): run the clock to that time instead."""
        if self.last_batch is not None and batch_id <= self.last_batch:
            return None
        t0 = time.perf_counter()
        seen: set[str] = set()
        unique = [e for e in events if not (e.id in seen or seen.add(e.id))]  # type: ignore[func-returns-value]
        done = self.store.applied_event_ids(e.id for e in unique) if unique else set()
        fresh = [e for e in unique if e.id not in done]
        updates, ignored = self._updates(fresh)
        if until is None:
            delta = self.engine.apply(updates)
            btime = max((e.time for e in fresh), default=self.last_time)
        else:
            delta = self.engine.advance(until)  # type: ignore[attr-defined]
            btime = until
        t_engine = time.perf_counter() - t0
        bulk_rows = None
        if bulk.is_columnar(delta):
            # millions of changes stay columns: store rows, alert inputs and derivations are
            # built from the ids (pipeline/bulk.py)
            bulk_rows = bulk.store_rows(delta, self.plan, self.keep)  # type: ignore[arg-type]
            added, removed, view_has = self._alert_inputs(delta)
            texts, n_skipped = bulk.derivations(delta, self.plan,  # type: ignore[arg-type]
                                                self.max_derivations)
            # (the removed facts' texts only where a written witness may have used one)
            gone = bulk.removed_texts(delta, self.keep) if self.users else []  # type: ignore[arg-type]
            self._aggregate_derivations(delta, self.max_derivations - len(texts.added),
                                        gone, texts)
            derivs_added, derivs_removed = [], []
        else:
            texts = None
            added, removed = (self._kept(d) for d in delta.facts(self.plan))
            derivs_added, derivs_removed, n_skipped = self._derivations(added, removed)
            view_has = view_has_from_store(self.store, self.rules, added, removed)
        link_states = self._link_states(delta)
        raised, cleared = self.rules.evaluate(batch_id, btime, added, removed, fresh, view_has,
                                              self.store.active_alert_keys())
        ledger = _pending(self.engine)
        bad = list(bad_lines)
        stats: dict[str, Any] = dict(delta.stats.as_dict())
        stats.update({
            "events": len(fresh), "duplicates": len(events) - len(fresh),
            "ignored": dict(ignored), "bad_lines": bad[:20], "bad_line_count": len(bad),
            "derivations": len(derivs_added) + (len(texts.added) if texts else 0),
            "derivations_skipped": n_skipped,
            "engine_seconds": round(t_engine, 6),
        })
        checkpoint = getattr(self.engine, "checkpoint", None)
        if checkpoint is not None:
            stats["clock"] = checkpoint()
        for k, v in (extra_stats or {}).items():
            stats[k] = stats.get(k, 0) + v if k == "spark_jobs" else v
        record = BatchRecord(batch_id=batch_id, time=btime, events=fresh,
                             added={} if bulk_rows else added,
                             removed={} if bulk_rows else removed,
                             derivations_added=derivs_added,
                             derivations_removed=derivs_removed, link_states=link_states,
                             alerts_raised=raised, alerts_cleared=cleared, stats=stats,
                             bulk=bulk_rows, derivation_texts=texts,
                             ledger=ledger_json(self.engine))
        stats["seconds"] = round(time.perf_counter() - t0, 6)
        written = self.store.write_batch(record)
        stats["seconds_total"] = round(time.perf_counter() - t0, 6)  # for the console only
        self.last_batch, self.last_time = batch_id, btime
        if ledger != self.ledger:  # informational copy; the batch stats are the truth
            self.store.set_meta("ledger_pending", json.dumps(_ledger_json(ledger)))
            self.ledger = ledger
        if written and self.notifier and (raised or cleared):
            self.notifier(raised, cleared, batch_id)
        if self.on_batch:
            self.on_batch(record, written)
        return record

    def _updates(self, events: list[Event]) -> tuple[list[tuple], Counter[str]]:
        """Signed base facts stamped with their event's time, sequence number and source
        (``ledger.Update``: the latest event per fact wins); events for relations the program
        lacks are counted, not applied (a capture reports sessions and neighbours a
        reachability program has no use for)."""
        out, ignored = [], Counter()
        for e in events:
            rel = e.fact.relation
            kind = None
            arity = self.plan.arity.get(rel, self.accepts.get(rel))
            if rel not in self.plan.base and rel not in self.accepts:
                kind = rel if rel not in self.plan.derived else f"derived:{rel}"
            elif arity != len(e.fact.args):
                kind = f"arity:{rel}"
            if kind is not None:
                why = _ignored_why(kind, e, arity)
                if self.strict:
                    raise EventLogError(f"{e.where or e.id}: {why} (--strict)")
                ignored[kind] += 1
                self.ignored_at.setdefault(kind, (e.where or f"event {e.id}", why))
            else:
                loc = self.plan.locspec.get(rel, 0)
                out.append((e.op, Fact(rel, e.fact.args, loc), e.time, _seq(e), e.source))
        return out, ignored

    def _alert_inputs(self, delta: Delta) -> tuple[dict[str, list[Fact]],
                                                   dict[str, list[Fact]], Any]:
        cfg = self.rules.config
        keyed: dict[str, tuple[int, ...]] = dict(cfg.route_relations)
        if cfg.reach_relation:
            keyed[cfg.reach_relation] = tuple(cfg.reach_key)
        whole = [*cfg.loop_relations, *cfg.pattern_relations]
        active = bulk.active_alert_keys(self.store.alerts(active_only=True), keyed)
        return bulk.alert_inputs(delta, self.plan, keyed, whole, active)  # type: ignore[arg-type]

    def _aggregate_derivations(self, delta: Delta, limit: int, gone: list[tuple[str, str]],
                               texts: DerivationTexts) -> None:
        """Witnesses of the facts that keep no supports (aggregates, and plain rules of an
        iterated stratum), ``limit`` at most, added to ``texts``: of the added ones, and of
        those whose written witness used a fact the batch removed (``gone``: every removed
        fact's (relation, args text)). The ``users`` mirror of the written witnesses, kept
        for this path only, is keyed by the store's (relation, args text) of each fact, which
        the batch renders anyway: decoding every removed fact to a Fact to look it up cost
        more than the engine's whole link event on a backbone's best routes."""
        witnessed = self._agg_rules.keys() | self._iterated_rels
        stale: set[Any] = set()
        if self.users:
            for key in gone:
                if key[0] in witnessed:
                    self._drop_support(key)
            stale = {u for key in gone for u in self.users.get(key, ())}
            stale.difference_update(gone)
        chosen = sorted(stale)[:max(0, limit)]
        prog = delta.prog  # type: ignore[attr-defined]
        stale_args: dict[str, list[tuple]] = {}
        for rel, text in chosen:  # (a few: witnesses are seldom stale)
            stale_args.setdefault(rel, []).append(fact_from_json_args(rel, text, None).args)
        rows: dict[str, list[np.ndarray]] = {}
        for rel, args in stale_args.items():
            found = prog.rels[rel].find(prog.values.encode_rows(args, len(args[0])))
            rows[rel] = [found[found >= 0]]
        left = limit - len(chosen)
        for rel in sorted(witnessed):
            if rel in self.plan.visible and left > 0:
                got = bulk.added_rows(delta, rel, left)  # type: ignore[arg-type]
                rows.setdefault(rel, []).append(got)
                left -= len(got)
        found = bulk.aggregate_witnesses(delta, self.plan,  # type: ignore[arg-type]
                                         {rel: np.concatenate(rs) for rel, rs in rows.items()})
        for head, label, body_text, body in found:
            self._set_support(head, label, body)
            texts.removed.append(head)
            texts.added.append((*head, label, body_text))
            texts.relations.add(head[0])
            texts.relations.update(rel for rel, _ in body)

    def _kept(self, facts: dict[str, list[Fact]]) -> dict[str, list[Fact]]:
        return {r: fs for r, fs in facts.items() if r in self.keep and fs}

    # -- derivations ------------------------------------------------------------------------
    def _set_support(self, f: Hashable, rule: str, body: tuple[Hashable, ...]) -> None:
        self._drop_support(f)
        self.support[f] = (rule, body)
        for b in body:
            self.users.setdefault(b, set()).add(f)

    def _drop_support(self, f: Hashable) -> None:
        old = self.support.pop(f, None)
        if old:
            for b in old[1]:
                us = self.users.get(b)
                if us:
                    us.discard(f)
                    if not us:
                        del self.users[b]

    def _derivations(self, added: dict[str, list[Fact]], removed: dict[str, list[Fact]]
                     ) -> tuple[list[tuple[Fact, str, list[Fact]]], list[Fact], int]:
        """Supports to write: each added visible fact's, and each surviving fact's whose kept
        support used a removed fact, as whole trees.

        Writing a fact's whole explain tree (every node's support replaced by the tree's
        choice) keeps the stored supports acyclic, so ``netrules why`` always ends at base
        facts: pointers out of the tree stay inside it, and the tree is acyclic.
        """
        gone = {f for fs in removed.values() for f in fs}
        removed_visible = [f for f in gone if f.relation in self.plan.visible]
        stale = {u for f in gone for u in self.users.get(f, ())} - gone
        for f in removed_visible:
            self._drop_support(f)
        targets = sorted({f for r, fs in added.items() if r in self.plan.visible for f in fs}
                         | stale, key=Fact.key)
        assigned: dict[Fact, tuple[str, tuple[Fact, ...]]] = {}
        skipped = 0
        for f in targets:
            if f in assigned:
                continue
            if len(assigned) >= self.max_derivations:
                skipped += 1
                continue
            tree = self.engine.explain(f)
            if tree is not None:
                self._visit(tree, assigned, set())
        for f, (rule, body) in assigned.items():
            self._set_support(f, rule, body)
        out = [(f, rule, list(body)) for f, (rule, body) in sorted(assigned.items(),
                                                                   key=lambda x: x[0].key())]
        return out, sorted(set(removed_visible) | set(assigned), key=Fact.key), skipped

    def _visit(self, d: Derivation, assigned: dict, active: set[Fact]) -> list[Fact]:
        """Assign ``d``'s support (and its subtree's); returns what ``d`` contributes to its
        parent's body: itself, or for an auxiliary (localization) fact its own body."""
        f = d.fact
        if f.relation in self.plan.base:
            return [f]
        if f in assigned or f in active:
            return [f] if f not in active else []
        active.add(f)
        children = d.children
        rule = d.rule or "?"
        if not children and f.relation in self._agg_rules:
            rule, children = self._aggregate_witness(f, rule)
        body: list[Fact] = []
        for c in children:
            body.extend(self._visit(c, assigned, active))
        active.discard(f)
        if f.relation in self.plan.aux:
            return body
        assigned[f] = (rule, tuple(dict.fromkeys(body)))
        return [f]

    def _aggregate_witness(self, f: Fact, label: str) -> tuple[str, list[Derivation]]:
        """An aggregate fact's support: one body instance attaining it (MIN/MAX bind the
        aggregated variable to the result; the smallest matching facts win, for stable
        output). Uses only ``engine.query`` and ``engine.explain``, so any engine works."""
        for rule in self._agg_rules.get(f.relation, []):
            found = _witness(self.engine, rule, f)
            if found is not None:
                kids = [self.engine.explain(b) or Derivation(b) for b in found]
                return rule.label or str(rule.head), kids
        return label, []

    # -- link states ------------------------------------------------------------------------
    def _link_states(self, delta: Delta) -> list[tuple[str, str, float | None, str]]:
        """``link(@S,D,C)`` changes as topology link states, on the stored orientation; an
        undirected link is down while either direction is."""
        rel = self.link_relation
        changed: dict[tuple[Value, Value], Value] = {}
        for row in delta.removed.get(rel, ()):
            self.links.discard((row[0], row[1]))
            changed[(row[0], row[1])] = row[2] if len(row) > 2 else None
        for row in delta.added.get(rel, ()):
            self.links.add((row[0], row[1]))
            changed[(row[0], row[1])] = row[2] if len(row) > 2 else None
        self.seen_links |= self.links
        out: dict[tuple[str, str], tuple[str, str, float | None, str]] = {}
        for (s, d), cost in changed.items():
            a, b = str(s), str(d)
            if (a, b) not in self.topo_pairs and (b, a) in self.topo_pairs:
                a, b = b, a
            up = (s, d) in self.links and ((d, s) in self.links or (d, s) not in self.seen_links)
            c = float(cost) if isinstance(cost, int | float) else None
            out[(a, b)] = (a, b, c, "up" if up else "down")
        return [out[k] for k in sorted(out)]


def _ignored_why(kind: str, e: Event, arity: int | None) -> str:
    """What is wrong with an event the program cannot take."""
    rel = e.fact.relation
    if kind.startswith("arity:"):
        return f"{e.fact} has {len(e.fact.args)} arguments; {rel} takes {arity}"
    if kind.startswith("derived:"):
        return f"{e.fact} asserts derived relation {rel}"
    return f"unknown relation {rel} in {e.fact}"


def _seq(e: Event) -> int:
    """The per-source sequence number an event id ends with (``source:seq``), else 0."""
    tail = e.id.rpartition(":")[2]
    return int(tail) if tail.isdigit() else 0


def _witness(engine: EngineLike, rule: ast.Rule, f: Fact) -> list[Fact] | None:
    pos, agg = rule.head.aggregate()  # type: ignore[misc]
    binding: dict[str, Value] = {}
    for i, t in enumerate(rule.head.args):
        v = f.args[i]
        if i == pos:
            if agg.func in ("MIN", "MAX") and agg.var is not None:
                binding[agg.var.name] = v
        elif isinstance(t, ast.Var):
            if binding.get(t.name, v) != v:
                return None
            binding[t.name] = v
        elif isinstance(t, ast.Const) and t.value != v:
            return None
    body: list[Fact] = []
    try:
        for atom in rule.atoms():
            args = tuple(ast.Const(binding[a.name]) if isinstance(a, ast.Var) and a.name in binding
                         else a for a in atom.args)
            matches = engine.query(ast.Atom(atom.relation, args, atom.locspec))
            if not matches:
                return None
            m = matches[0]
            for a, v in zip(atom.args, m.args, strict=True):
                if isinstance(a, ast.Var) and a.name != "_":
                    binding[a.name] = v
            body.append(m)
    except Exception:  # noqa: BLE001 - a body this simple search cannot solve: no witness
        return None
    return body
