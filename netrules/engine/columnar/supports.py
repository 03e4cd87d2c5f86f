"""Kept supports as columns: which rule instance holds each derived fact up.

A fact is named by a *gid*, ``relation code << 34 | row``. A support is a row of ``head``,
``rule`` and ``body`` gids (padded with -1 to the widest rule); two multimaps find the supports
a body fact takes part in (the kill phase's frontier step) and a head's supports (``why``).
At most K supports are kept per fact, each well-founded (its same-stratum body facts have a
lower rank than its head), so following supports always ends at base facts: paper 000's
acyclic derivations without its exponential derivation sets.
"""

from __future__ import annotations

import numpy as np

from netrules.engine.columnar.relation import Buckets

__all__ = ["Supports", "gid", "split_gid"]

_ROW_BITS = np.int64(34)
_ROW_MASK = np.int64((1 << 34) - 1)


def gid(code: int, rows: np.ndarray) -> np.ndarray:
    return (np.int64(code) << _ROW_BITS) | rows


def split_gid(g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return g >> _ROW_BITS, g & _ROW_MASK


class Supports:
    def __init__(self, width: int) -> None:
        self.width = max(width, 1)
        self.n = 0
        cap = 1024
        self.head = np.zeros(cap, np.int64)
        self.rule = np.zeros(cap, np.int32)
        self.body = np.full((cap, self.width), -1, np.int64)
        self.alive = np.zeros(cap, bool)
        self.count = 0
        self.by_body = Buckets()
        self.by_head = Buckets()
        self.touched: list[np.ndarray] = []  # head gids whose supports changed this batch

    def _reserve(self, need: int) -> None:
        cap = len(self.alive)
        if need <= cap:
            return
        while cap < need:
            cap *= 2
        for name in ("head", "rule", "body", "alive"):
            old = getattr(self, name)
            fill = -1 if name == "body" else 0
            new = np.full((cap, *old.shape[1:]), fill, dtype=old.dtype)
            new[: self.n] = old[: self.n]
            setattr(self, name, new)

    def add(self, head: np.ndarray, rule: np.ndarray, body: np.ndarray) -> np.ndarray:
        m = len(head)
        if m == 0:
            return np.empty(0, np.int64)
        start = self.n
        self._reserve(start + m)
        ids = np.arange(start, start + m, dtype=np.int64)
        self.head[ids] = head
        self.rule[ids] = rule
        self.body[ids, : body.shape[1]] = body
        self.alive[ids] = True
        self.n += m
        self.count += m
        sid = np.repeat(ids, body.shape[1])
        flat = body.reshape(-1)
        used = flat >= 0
        self.by_body.append(flat[used], sid[used])
        self.by_head.append(head, ids)
        self.touched.append(head)
        return ids

    def using(self, gids: np.ndarray) -> np.ndarray:
        """Ids of the alive supports whose body holds one of ``gids`` (may repeat)."""
        if not len(gids) or not self.count:
            return np.empty(0, np.int64)
        _, sids = self.by_body.probe(gids)
        return sids[self.alive[sids]]

    def of(self, head_gid: int) -> np.ndarray:
        _, sids = self.by_head.probe(np.array([head_gid], dtype=np.int64))
        return sids[self.alive[sids]]

    def kill(self, sids: np.ndarray) -> None:
        self.alive[sids] = False
        self.count -= len(sids)
        self.touched.append(self.head[sids])

    def first_of(self, heads: np.ndarray) -> np.ndarray:
        """Per head gid, its alive support of least id (the one the store shows), or -1."""
        out = np.full(len(heads), -1, dtype=np.int64)
        if not len(heads):
            return out
        qi, sids = self.by_head.probe(heads)
        live = self.alive[sids]
        qi, sids = qi[live], sids[live]
        if len(sids):
            order = np.lexsort((sids, qi))
            qi, sids = qi[order], sids[order]
            first = np.r_[True, qi[1:] != qi[:-1]]
            out[qi[first]] = sids[first]
        return out

    def nbytes(self) -> int:
        per = 8 + 4 + 8 * self.width + 1
        return per * len(self.alive) + self.by_body.nbytes() + self.by_head.nbytes()

    def trim(self) -> None:
        """Give back the growth slack after a large batch (see ``Relation.trim``)."""
        cap = len(self.alive)
        if self.n < 65_536 or cap * 4 < self.n * 5:
            return
        keep = self.n + self.n // 8
        for name in ("head", "rule", "body", "alive"):
            setattr(self, name, getattr(self, name)[:keep].copy())

    def settle(self) -> None:
        """Sort a large batch's appended index entries now (the batch pays, not the next)."""
        for b in (self.by_body, self.by_head):
            if sum(len(k) for k, _ in b.pending) > 65_536:
                b.settle()

    def compact(self) -> None:
        """Drop dead supports (link flaps leave them behind) once they outnumber the living;
        support ids are transient, so renumbering is free."""
        if self.n < 4096 or self.n < 2 * self.count:
            return
        keep = np.flatnonzero(self.alive[: self.n])
        head, rule, body = self.head[keep], self.rule[keep], self.body[keep]
        touched = self.touched
        self.__init__(self.width)  # type: ignore[misc]
        self.add(head, rule, body)
        self.touched = touched
