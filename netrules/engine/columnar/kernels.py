"""The loops a column engine cannot write as a few array passes, compiled once by Numba.

A hash probe and a walk down a list are loops whose trip count differs per element. Written
as NumPy passes over the elements still looping, each trip costs a dozen array calls whatever
the number of elements left (about 30 µs a probe and 400 µs a 200-cell walk, most of a
best-routes sweep's time once the deltas are small). Compiled, a call costs about a
microsecond plus nanoseconds per element. ``cache=True`` keeps the machine code beside the
module (or in Numba's user cache where that is read-only), so only the first run on a machine
compiles (about 25 s for all the americas job calls on 2 cores: 30.2 s the first time, 5.2 s
after; any edit of this file makes Numba compile them all again; ``warm``'s caller is told
when that is happening).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numba import njit

__all__ = ["expand", "find_slots", "list_elements", "member", "place", "reach", "release",
           "best_supports", "kill_step", "kill_reach", "revive",
           "lookup", "chain_keys", "linear_closure", "linear_rederive", "counting_order",
           "stable_order", "merge_runs", "drop_heads", "move_kept", "renumber_run", "first_kept",
           "warm",
           "dense_offsets", "expand_dense", "prefill_table", "value_codes", "prefill_rows",
           "dense_rederive", "row_table", "below_index", "head_codes", "ledger_plain", "net_rows",
           "base_rows", "copy_supports",
           "get_or_add",
           "chain_intern", "least_keyed_lists", "store_supports", "mark_first", "hide_all",
           "compiled"]

EMPTY = -1
GONE = -2  # a deleted slot: lookups probe past it, inserts may reuse it
PREFILLED = -3  # ``linear_closure``'s prefilled table holds PREFILLED - row (<= -3)
# and, made for every row (``prefill_table``), ALIVE - row for a standing row: rows below
# 2**29 keep the two ranges apart in int32
ALIVE = PREFILLED - (1 << 29)
MIX = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True, nogil=True)
def _home(key: np.int64, shift: np.uint64) -> np.int64:  # pragma: no cover - compiled
    return np.int64((np.uint64(key) * MIX) >> shift)


@njit(cache=True, nogil=True)
def _slot(table: np.ndarray, mask: np.int64, shift: np.uint64,
          k: np.int64) -> np.int64:  # pragma: no cover - compiled
    """The slot holding ``k`` in the open-addressing ``table``, or -1 where absent."""
    s = _home(k, shift)
    while True:
        seen = table[s]
        if seen == k:
            return s
        if seen == EMPTY:
            return -1
        s = (s + 1) & mask


@njit(cache=True, nogil=True)
def find_slots(table: np.ndarray, mask: np.int64, shift: np.uint64,
               keys: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """Slot of each key in the open-addressing ``table``, or -1 where absent."""
    out = np.empty(len(keys), dtype=np.int64)
    for i in range(len(keys)):
        out[i] = _slot(table, mask, shift, keys[i])
    return out


@njit(cache=True, nogil=True)
def lookup(table: np.ndarray, vals: np.ndarray, mask: np.int64, shift: np.uint64,
           keys: np.ndarray, default: np.int64) -> np.ndarray:  # pragma: no cover - compiled
    """The value of each key in the open-addressing ``table``, or ``default`` where absent:
    ``find_slots`` and the gather of the values in one pass."""
    out = np.empty(len(keys), dtype=np.int64)
    for i in range(len(keys)):
        s = _slot(table, mask, shift, keys[i])
        out[i] = vals[s] if s >= 0 else default
    return out


@njit(cache=True, nogil=True)
def chain_keys(table: np.ndarray, vals: np.ndarray, mask: np.int64, shift: np.uint64,
               rows: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """The exact key of each row of three or more ids (``keys.Pairs``): the prefix looked
    up pair by pair in the pair map, then packed with the last id; -1 where an id is
    negative (never interned) or a prefix was never stored. One call, where the same
    lookups as array passes were a dozen NumPy calls a row of a best-routes sweep paid."""
    n, w = rows.shape
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        p = np.int64(rows[i, 0])
        for j in range(1, w):
            c = np.int64(rows[i, j])
            if p < 0 or c < 0:
                p = -1
                break
            if j == w - 1:
                p = (p << 31) | c
                break
            s = _slot(table, mask, shift, (p << 31) | c)
            p = np.int64(vals[s]) if s >= 0 else np.int64(-1)
        out[i] = p
    return out


@njit(cache=True, nogil=True)
def place(table: np.ndarray, vals: np.ndarray, mask: np.int64, shift: np.uint64,
          keys: np.ndarray, new_vals: np.ndarray) -> int:  # pragma: no cover - compiled
    """Insert keys known absent and distinct; returns how many tombstones were reused."""
    reused = 0
    for i in range(len(keys)):
        s = _home(keys[i], shift)
        while table[s] >= 0:
            s = (s + 1) & mask
        if table[s] == GONE:
            reused += 1
        table[s] = keys[i]
        vals[s] = new_vals[i]
    return reused


@njit(cache=True, nogil=True)
def member(head: np.ndarray, tail: np.ndarray, nil: np.int64, cells: np.int64,
           lists: np.ndarray, x: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """1 where ``x[i]`` is an element of the list ``lists[i]`` (cons cells), else 0."""
    out = np.zeros(len(lists), dtype=np.int64)
    for i in range(len(lists)):
        cur = lists[i]
        while cur != nil:
            k = cur - cells
            if head[k] == x[i]:
                out[i] = 1
                break
            cur = tail[k]
    return out


@njit(cache=True, nogil=True)
def _first_at_least(a: np.ndarray, x: np.int64, lo: np.int64,
                    hi: np.int64 = -1) -> np.int64:  # pragma: no cover
    """The first index in ``lo..hi`` (``hi`` -1: the end) whose value is at least ``x``, in
    a sorted run."""
    if hi < 0:
        hi = len(a)
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, nogil=True)
def _b_span(bkey: np.ndarray, boff: np.ndarray, cidx: np.ndarray, coff: np.ndarray,
            clo: np.ndarray, i: np.int64, q: np.int64) -> tuple:  # pragma: no cover
    """Rule ``i``'s B rows of join key ``q``: the range of ``bkey`` holding it. By the rule's
    offsets by key (``cidx[coff[i]:coff[i + 1]]``, keys from ``clo[i]``) when it has them,
    else by binary search: on a backbone's rederivation the search's mispredicted branches
    were a sixth of the closure."""
    lo = boff[i]
    b = boff[i + 1]
    if coff[i + 1] > coff[i]:
        j = q - clo[i]
        if j < 0 or j >= coff[i + 1] - coff[i] - 1:
            return lo, lo
        return lo + cidx[coff[i] + j], lo + cidx[coff[i] + j + 1]
    e = _first_at_least(bkey[:b], q, lo)
    end = e
    while end < b and bkey[end] == q:
        end += 1
    return e, end


@njit(cache=True, nogil=True)
def _row_key(cols: np.ndarray, at: np.ndarray, h: np.int64,
             i: np.int64) -> np.int64:  # pragma: no cover - compiled
    """Row ``h``'s packed key on the columns ``at[i]`` names (the second -1 when one): what
    rule ``i``'s sorted B rows are matched by in the linear closure and rederivation."""
    q = np.int64(cols[h, at[i, 0]])
    if at[i, 1] >= 0:
        q = (q << 31) | cols[h, at[i, 1]]
    return q


@njit(cache=True, nogil=True)
def expand(skeys: np.ndarray, srows: np.ndarray,
           q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - compiled
    """Every (probe index, row) whose key equals the probe's, from a key-sorted run: a
    binary search per probe, then the matches copied out."""
    n = len(q)
    lo = np.empty(n, dtype=np.int64)
    hi = np.empty(n, dtype=np.int64)
    total = 0
    for i in range(n):
        a = _first_at_least(skeys, q[i], 0)
        b = a
        while b < len(skeys) and skeys[b] == q[i]:
            b += 1
        lo[i], hi[i] = a, b
        total += b - a
    qi = np.empty(total, dtype=np.int64)
    rows = np.empty(total, dtype=np.int64)
    j = 0
    for i in range(n):
        for p in range(lo[i], hi[i]):
            qi[j] = i
            rows[j] = srows[p]
            j += 1
    return qi, rows


@njit(cache=True, nogil=True)
def list_elements(head: np.ndarray, tail: np.ndarray, nil: np.int64, cells: np.int64,
                  lists: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """The elements of each list (cons cells) as a row of a matrix, padded with -1."""
    width = 0
    for i in range(len(lists)):
        n = 0
        cur = lists[i]
        while cur != nil:
            n += 1
            cur = tail[cur - cells]
        width = max(width, n)
    out = np.full((len(lists), width), -1, dtype=np.int64)
    for i in range(len(lists)):
        j = 0
        cur = lists[i]
        while cur != nil:
            out[i, j] = head[cur - cells]
            cur = tail[cur - cells]
            j += 1
    return out


@njit(cache=True, nogil=True)
def reach(n: int, src: np.ndarray, dst: np.ndarray, roots: np.ndarray,
          stop: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """Nodes (of ``0..n-1``) reached from ``roots`` along edges ``src -> dst`` without
    entering a ``stop`` node, roots included: a depth-first search over a CSR built here."""
    deg = np.zeros(n + 1, dtype=np.int64)
    for e in range(len(src)):
        deg[src[e] + 1] += 1
    for v in range(n):
        deg[v + 1] += deg[v]
    fill = deg[:-1].copy()
    adj = np.empty(len(src), dtype=np.int64)
    for e in range(len(src)):
        adj[fill[src[e]]] = dst[e]
        fill[src[e]] += 1
    seen = np.zeros(n, dtype=np.bool_)
    for v in stop:
        seen[v] = True
    stack = np.empty(n + len(roots), dtype=np.int64)
    top = 0
    out = np.empty(n, dtype=np.int64)
    k = 0
    for r in roots:
        if not seen[r]:
            seen[r] = True
            stack[top] = r
            top += 1
    while top:
        top -= 1
        v = stack[top]
        out[k] = v
        k += 1
        for e in range(deg[v], deg[v + 1]):
            w = adj[e]
            if not seen[w]:
                seen[w] = True
                stack[top] = w
                top += 1
    return out[:k]


@njit(cache=True, nogil=True)
def _list_less(a: np.int64, b: np.int64, head: np.ndarray, tail: np.ndarray, nil: np.int64,
               cells: np.int64, small: np.int64,
               atom_rank: np.ndarray) -> np.int64:  # pragma: no cover - compiled
    """1 if list ``a`` sorts before list ``b`` (element by element, a prefix first), 0 if
    not, -1 if an element is itself a list (the caller compares those another way)."""
    while a != b:  # hash-consed: a shared tail is equal from there on
        if a == nil:
            return 1
        if b == nil:
            return 0
        ea, eb = head[a - cells], head[b - cells]
        if ea >= cells or eb >= cells:
            return -1
        if ea != eb:
            ra = ea if ea < small else small + atom_rank[ea - small]
            rb = eb if eb < small else small + atom_rank[eb - small]
            return 1 if ra < rb else 0
        a, b = tail[a - cells], tail[b - cells]
    return 0


@njit(cache=True, nogil=True)
def release(nsup: np.ndarray, alive: np.ndarray,
            heads: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """Take one kept support from each of ``heads`` (rows, repeated once per support lost)
    and return the alive rows left with none, each once, now hidden (``alive`` cleared):
    ``np.subtract.at`` plus a dedupe plus a filter, which cost milliseconds a kill step."""
    out = np.empty(len(heads), dtype=np.int64)
    k = 0
    for i in range(len(heads)):
        r = heads[i]
        nsup[r] -= 1
        if nsup[r] <= 0 and alive[r]:
            alive[r] = False
            out[k] = r
            k += 1
    return out[:k]


@njit(cache=True, nogil=True)
def best_supports(rows: np.ndarray, rank: np.ndarray, order: np.ndarray,
                  k: int) -> tuple:  # pragma: no cover - compiled
    """Per head row, its least candidate rank and up to ``k`` candidates of that rank.

    ``order`` sorts the candidates by (row, rank); empty, the sort is made here (a few
    thousand candidates: NumPy's sort is faster past that, and the key and the call cost
    more than the sort below it). Returns (the kept candidates' indices, grouped by row;
    each distinct row; its rank; how many candidates it keeps): the group-by of an
    admission round in one pass instead of a dozen array calls."""
    n = len(rows)
    if len(order) != n:
        key = np.empty(n, dtype=np.int64)
        for j in range(n):
            key[j] = (np.int64(rows[j]) << 31) | np.int64(rank[j])
        order = np.argsort(key)
    idx = np.empty(n, dtype=np.int64)
    facts = np.empty(n, dtype=np.int64)
    frank = np.empty(n, dtype=np.int32)
    nsup = np.empty(n, dtype=np.int8)
    m = 0
    f = 0
    i = 0
    while i < n:
        r = rows[order[i]]
        best = rank[order[i]]
        c = 0
        while i < n and rows[order[i]] == r:
            if c < k and rank[order[i]] == best:
                idx[m] = order[i]
                m += 1
                c += 1
            i += 1
        facts[f] = r
        frank[f] = best
        nsup[f] = c
        f += 1
    return idx[:m], facts[:f], frank[:f], nsup[:f]


@njit(cache=True, nogil=True)
def _kill(sids: np.ndarray, m: np.int64, s_alive: np.ndarray, s_rule: np.ndarray,
          s_head: np.ndarray, head_code: np.ndarray, code: np.int64, nsup: np.ndarray,
          alive: np.ndarray, touched: np.ndarray, tbefore: np.ndarray, gone: np.ndarray,
          g: np.int64, first: np.ndarray, f: np.int64, heads: np.ndarray,
          k: np.int64) -> tuple:  # pragma: no cover - compiled
    """``kill_step``'s pass over the first ``m`` of ``sids``, appending to ``gone``,
    ``first`` and ``heads`` (room for ``m`` more each) from ``g``, ``f`` and ``k``; returns
    the three counts after it."""
    for i in range(m):
        s = sids[i]
        if not s_alive[s] or head_code[s_rule[s]] != code:
            continue
        s_alive[s] = False
        r = s_head[s]
        heads[k] = r
        k += 1
        nsup[r] -= 1
        if nsup[r] <= 0 and alive[r]:
            gone[g] = r
            g += 1
            alive[r] = False
            if not touched[r]:  # FLIP, written out (see ``hide_all``)
                touched[r] = True
                tbefore[r] = True
                first[f] = r
                f += 1
    return g, f, k


@njit(cache=True, nogil=True)
def kill_step(sids: np.ndarray, s_alive: np.ndarray, s_rule: np.ndarray, s_head: np.ndarray,
              head_code: np.ndarray, code: np.int64, nsup: np.ndarray, alive: np.ndarray,
              touched: np.ndarray, tbefore: np.ndarray) -> tuple:  # pragma: no cover
    """One kill step of a stratum of one relation, ``code``: kill each alive support in
    ``sids`` (repeats allowed) whose head is of that relation, take one kept support from
    its head, and hide the heads left with none (``release``), marking them touched with
    "alive before" where the batch had not touched them yet.

    Returns (the heads hidden, those of them touched for the first time, the head row of
    every support killed): about thirty array calls of a kill step in one pass."""
    gone = np.empty(len(sids), dtype=np.int64)
    first = np.empty(len(sids), dtype=np.int64)
    heads = np.empty(len(sids), dtype=np.int64)
    g, f, k = _kill(sids, len(sids), s_alive, s_rule, s_head, head_code, code, nsup, alive,
                    touched, tbefore, gone, 0, first, 0, heads, 0)
    return gone[:g], first[:f], heads[:k]


@njit(cache=True, nogil=True)
def _dense_runs(nk: np.int64, keys: tuple, nb: np.int64, dstart: np.ndarray,
                dspan: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """Offsets by key of each of the first ``nk`` key-sorted runs whose keys are dense
    (rows below twice the index's ``nb`` entries), one array: run ``j``'s start in it in
    ``dstart[j]`` (-1: searched still), its keys' span in ``dspan[j]``."""
    total = 0
    for j in range(nk):
        run = keys[j]
        if len(run) and run[0] >= 0 and run[-1] < 2 * nb:
            dstart[j], dspan[j] = total, run[-1] + 1
            total += run[-1] + 2
    doff = np.empty(total, dtype=np.int32)
    for j in range(nk):
        if dstart[j] >= 0:
            doff[dstart[j]: dstart[j] + dspan[j] + 1] = dense_offsets(keys[j], dspan[j])
    return doff


@njit(cache=True, nogil=True)
def kill_reach(rows: np.ndarray, no: np.int64, offs: tuple, offv: tuple, nk: np.int64,
               keys: tuple, keyv: tuple, dense_after: np.int64, nb: np.int64,
               s_alive: np.ndarray, s_rule: np.ndarray, s_head: np.ndarray,
               head_code: np.ndarray, code: np.int64, nsup: np.ndarray, alive: np.ndarray,
               touched: np.ndarray, tbefore: np.ndarray) -> tuple:  # pragma: no cover
    """Every kill step of a recursive stratum of one relation, ``code``, after its first:
    ``kill_step`` repeated until no fact is left without support, the supports of each hidden
    fact found in the index by body fact (``Buckets``: its first ``no`` runs kept as offsets,
    ``offs`` / ``offv``, and ``nk`` key-sorted runs, ``keys`` / ``keyv``; tuples of a fixed
    length, padded, so one signature serves every index). ``rows``: the facts the first step
    hid. A step in Python cost about 40 µs whatever its size, and a small graph's kill
    takes tens of steps (a rank chain of the ten links a batch takes down).

    A key-sorted run is binary-searched until the kill has asked more than ``dense_after``
    facts; then each run whose keys are dense (rows, below twice the ``nb`` entries of the
    index) is read through offsets made for the rest of the kill (``psn._Using``'s rule: a
    partition of a backbone asks hundreds of thousands of facts, a search of a large run
    each).

    Returns what ``kill_step`` returns, over every step."""
    work = np.empty(max(2 * len(rows), 64), dtype=np.int64)
    work[: len(rows)] = rows
    nw = len(rows)
    first = np.empty(64, dtype=np.int64)
    heads = np.empty(64, dtype=np.int64)
    dstart = np.full(nk + 1, -1, dtype=np.int64)  # a searched run's offsets, once made
    dspan = np.zeros(nk + 1, dtype=np.int64)
    doff = np.empty(0, dtype=np.int32)
    sids = np.empty(64, dtype=np.int64)
    los = np.empty(64, dtype=np.int64)
    his = np.empty(64, dtype=np.int64)
    doff_made = 0
    f = 0
    k = 0
    i = 0
    while i < nw:
        # a step in two passes, as ``expand`` then ``kill_step`` do: the supports of the
        # step's facts gathered run by run, then killed. Fact by fact instead, each run
        # taken out of its tuple per fact (a reference count each) and room checked per
        # entry, americas' ten-link kill took 26 ms against the stepped loop's 17; this
        # way 15 against 15
        start, end, m = i, nw, 0
        if doff_made == 0 and end > dense_after:
            doff = _dense_runs(nk, keys, nb, dstart, dspan)
            doff_made = 1
        los, his = _grow_to(los, end - start), _grow_to(his, end - start)
        for j in range(no + nk):
            if j < no:
                off, vals = offs[j], offv[j]
                for x in range(start, end):
                    r = work[x]
                    ok = r + 1 < len(off)
                    los[x - start] = off[r] if ok else 0
                    his[x - start] = off[r + 1] if ok else 0
            else:
                run, vals, at = keys[j - no], keyv[j - no], dstart[j - no]
                span = dspan[j - no]
                for x in range(start, end):
                    r = work[x]
                    if at >= 0:
                        ok = r < span
                        los[x - start] = doff[at + r] if ok else 0
                        his[x - start] = doff[at + r + 1] if ok else 0
                    else:
                        lo = _first_at_least(run, r, 0)
                        hi = lo
                        while hi < len(run) and run[hi] == r:
                            hi += 1
                        los[x - start], his[x - start] = lo, hi
            total = m
            for x in range(end - start):
                total += his[x] - los[x]
            sids = _grow_to(sids, total)
            for x in range(end - start):
                for p in range(los[x], his[x]):
                    sids[m] = vals[p]
                    m += 1
        i = end
        # room for what the step can kill, made once a step (a check per kill cost more
        # than the kill on a backbone); what dies joins the facts to walk from
        heads, first, work = _grow_to(heads, k + m), _grow_to(first, f + m), _grow_to(work, nw + m)
        nw, f, k = _kill(sids, m, s_alive, s_rule, s_head, head_code, code, nsup, alive,
                         touched, tbefore, work, nw, first, f, heads, k)
    return work[len(rows):nw], first[:f], heads[:k]


@njit(cache=True, nogil=True)
def revive(facts: np.ndarray, frank: np.ndarray, nsup: np.ndarray, rank: np.ndarray,
           kept: np.ndarray, alive: np.ndarray, touched: np.ndarray,
           tbefore: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """Make the dead rows ``facts`` alive with their rank and kept-support count, marking
    them touched ("dead before") where the batch had not touched them yet; returns those.
    The tail of every admission round in one pass instead of seven array calls."""
    first = np.empty(len(facts), dtype=np.int64)
    f = 0
    for i in range(len(facts)):
        r = facts[i]
        rank[r] = frank[i]
        kept[r] = nsup[i]
        alive[r] = True
        if not touched[r]:  # FLIP, written out (see ``hide_all``)
            touched[r] = True
            tbefore[r] = False
            first[f] = r
            f += 1
    return first[:f]



@njit(cache=True, nogil=True)
def _grow_to(a: np.ndarray, need: np.int64) -> np.ndarray:  # pragma: no cover - compiled
    """``a`` itself if it holds ``need`` rows, else a copy with at least twice the rows."""
    if need <= len(a):
        return a
    out = np.empty((max(need, 2 * len(a)),) + a.shape[1:], dtype=a.dtype)
    out[: len(a)] = a
    return out


@njit(cache=True, nogil=True)
def _local_home(tkeys: np.ndarray, k: np.int64) -> np.int64:  # pragma: no cover - compiled
    """The slot of ``k`` in a local open-addressing table, or the empty slot it would take."""
    mask = len(tkeys) - 1
    s = np.int64((np.uint64(k) * MIX) >> np.uint64(32)) & mask
    while tkeys[s] != EMPTY and tkeys[s] != k:
        s = (s + 1) & mask
    return s


@njit(cache=True, nogil=True)
def _local_rehash(tkeys: np.ndarray, tvals: np.ndarray, size: np.int64
                  ) -> tuple:  # pragma: no cover - compiled
    """The local table's entries in a table of ``size`` slots (a power of two)."""
    nk = np.full(size, EMPTY, dtype=np.int64)
    nv = np.empty(size, dtype=np.int64)
    for j in range(len(tkeys)):
        if tkeys[j] != EMPTY:
            s = _local_home(nk, tkeys[j])
            nk[s] = tkeys[j]
            nv[s] = tvals[j]
    return nk, nv


@njit(cache=True, nogil=True)
def _closure_round(lo: np.int64, hi: np.int64, nf: np.int64, nsup: np.int64, tused: np.int64,
                   frow: np.ndarray, fcol: np.ndarray, frank: np.ndarray, fcount: np.ndarray,
                   sup: np.ndarray, tkeys: np.ndarray, tvals: np.ndarray, fcode: np.ndarray,
                   bcode: np.ndarray, dense: np.ndarray, nv: np.int64, use_dense: bool,
                   ralive: np.ndarray,
                   mkeys: np.ndarray, mvals: np.ndarray, mmask: np.int64, mshift: np.uint64,
                   boff: np.ndarray, bkey: np.ndarray, cidx: np.ndarray, coff: np.ndarray,
                   clo: np.ndarray, brow: np.ndarray, bval: np.ndarray,
                   rjoin: np.ndarray, hsrc: np.ndarray, hidx: np.ndarray,
                   allowed: np.ndarray, restrict: bool, k: np.int64,
                   rowtab: np.ndarray, spans: np.ndarray) -> tuple:  # pragma: no cover
    """One round of ``linear_closure`` over the frontier facts ``lo..hi``, into arrays the
    caller sized for it: no array is reassigned here, which keeps the loop tight (growing
    them in the loop cost half the kernel's time). ``spans``: each fact's B rows per rule
    (``_closure_spans``)."""
    by_rows = len(rowtab) > 0
    arity = fcol.shape[1]
    ranks = frank[lo:hi]
    one = hi > lo and ranks.min() == ranks.max()  # the usual frontier: one rank, no sort
    order = np.arange(lo, hi) if one else lo + np.argsort(ranks)
    for d in order:
        r1 = frank[d] + 1
        for i in range(len(boff) - 1):
            at = (d - lo) * (len(boff) - 1) + i
            e, end = spans[at, 0], spans[at, 1]
            # where each head value comes from, read once a fact and rule (7% of a
            # fat-tree's closure was these reads per B row)
            b0, x0 = hsrc[i, 0] == 0, hidx[i, 0]
            b1, x1 = hsrc[i, 1] == 0, hidx[i, 1]
            dh0 = fcol[d, x0] if not b0 else np.int64(0)  # (x0 is a slot of bval then)
            dc0 = fcode[d, x0] if not b0 else np.int64(0)
            dh1 = fcol[d, x1] if arity > 1 and not b1 else np.int64(0)
            dc1 = fcode[d, x1] if arity > 1 and not b1 else np.int64(0)
            while e < end:
                h0 = bval[e, x0] if b0 else dh0
                c0 = bcode[e, x0] if b0 else dc0
                h1 = np.int64(0)
                c1 = np.int64(0)
                hk = h0
                if arity > 1:
                    h1 = bval[e, x1] if b1 else dh1
                    c1 = bcode[e, x1] if b1 else dc1
                    hk = (h0 << 31) | h1
                s = np.int64(0)
                dk = c0 * nv + c1 if arity > 1 else c0
                if use_dense:
                    g = np.int64(dense[dk])
                    known = g != EMPTY and g > PREFILLED
                else:
                    s = _local_home(tkeys, hk)
                    known = tkeys[s] == hk
                    g = tvals[s]
                if not known:
                    if use_dense and g <= PREFILLED:  # prefilled: a dead allowed row,
                        row = PREFILLED - g  # or (``ALIVE``) a standing one
                        ok = g > ALIVE
                    else:
                        if by_rows:  # R's rows by value codes (``row_table``)
                            row = np.int64(rowtab[dk])
                        else:
                            ms = _slot(mkeys, mmask, mshift, hk)
                            row = np.int64(mvals[ms]) if ms >= 0 else np.int64(-1)
                        ok = row < 0 or not ralive[row]
                        if ok and restrict:
                            at = _first_at_least(allowed, row, 0)
                            ok = row >= 0 and at < len(allowed) and allowed[at] == row
                    g = np.int64(-2)
                    if ok:
                        g = nf
                        nf += 1
                        frow[g] = row
                        fcol[g, 0] = h0
                        fcode[g, 0] = c0
                        if arity > 1:
                            fcol[g, 1] = h1
                            fcode[g, 1] = c1
                        frank[g] = r1
                        fcount[g] = 0
                    if use_dense:
                        dense[dk] = g
                    else:
                        tkeys[s] = hk
                        tvals[s] = g
                        tused += 1
                if g >= hi and frank[g] == r1 and fcount[g] < k:
                    sup[nsup, 0] = g
                    sup[nsup, 1] = i
                    sup[nsup, 2] = brow[e]
                    sup[nsup, 3] = d
                    nsup += 1
                    fcount[g] += 1
                e += 1
    return nf, nsup, tused


@njit(cache=True, nogil=True)
def _closure_spans(lo: np.int64, hi: np.int64, fcol: np.ndarray, boff: np.ndarray,
                   bkey: np.ndarray, cidx: np.ndarray, coff: np.ndarray, clo: np.ndarray,
                   rjoin: np.ndarray, spans: np.ndarray) -> tuple:  # pragma: no cover
    """Per frontier fact ``lo..hi`` and rule, the range of B rows it joins (``_b_span`` of
    its ``_row_key``, written out here: a call passing five arrays cost 30 ns in reference
    counts, as much as the work it did, twice per fact a round), in ``spans`` (grown to
    fit), and how many (fact, B row) pairs the round will meet: a bound on the facts,
    supports and table entries it can add."""
    nr = len(boff) - 1
    spans = _grow_to(spans, (hi - lo) * nr)
    n = 0
    for d in range(lo, hi):
        for i in range(nr):
            q = np.int64(fcol[d, rjoin[i, 0]])
            if rjoin[i, 1] >= 0:
                q = (q << 31) | fcol[d, rjoin[i, 1]]
            e = boff[i]
            end = e
            if coff[i + 1] > coff[i]:
                j = q - clo[i]
                if j >= 0 and j < coff[i + 1] - coff[i] - 1:
                    end = e + cidx[coff[i] + j + 1]
                    e = e + cidx[coff[i] + j]
            else:  # a binary search in the rule's rows
                b = boff[i + 1]
                e = _first_at_least(bkey, q, e, b)
                end = e
                while end < b and bkey[end] == q:
                    end += 1
            at = (d - lo) * nr + i
            spans[at, 0] = e
            spans[at, 1] = end
            n += end - e
    return n, spans


@njit(cache=True, nogil=True)
def linear_closure(seeds: np.ndarray, rcols: np.ndarray, rrank: np.ndarray,
                   ralive: np.ndarray, mkeys: np.ndarray, mvals: np.ndarray, mmask: np.int64,
                   mshift: np.uint64, boff: np.ndarray, bkey: np.ndarray, cidx: np.ndarray,
                   coff: np.ndarray, clo: np.ndarray, brow: np.ndarray,
                   bval: np.ndarray, rjoin: np.ndarray, hsrc: np.ndarray, hidx: np.ndarray,
                   allowed: np.ndarray, restrict: bool, k: np.int64, bcode: np.ndarray,
                   scode: np.ndarray, nv: np.int64, start_dense: bool, switch: np.int64,
                   max_work: np.int64, prefill: np.ndarray, room: np.int64,
                   rowtab: np.ndarray) -> tuple:  # pragma: no cover - compiled
    """Semi-naive to the fixpoint of a stratum of one relation R (arity 1 or 2) whose rules
    that read R are linear, ``R(h) :- B(b), R(r)`` with B below: every round of
    ``ColumnarProgram._seminaive`` after the first, in one call.

    ``seeds`` are R rows just made alive (the last round's delta). Rule i's alive B rows,
    sorted by their join key, are ``bkey``/``brow``/``bval[boff[i]:boff[i+1]]`` (``bval``:
    the B values the head takes, two slots); R's key is column ``rjoin[i, 0]`` of a delta
    row, packed with column ``rjoin[i, 1]`` when that is not -1. Head position p is slot
    ``hidx[i, p]`` of ``bval`` (``hsrc[i, p]`` 0) or column ``hidx[i, p]`` of the delta row
    (1). A head is new when its row (R's hash map: ``mkeys``/``mvals``) is absent or dead
    (with ``restrict``: one of the sorted ``allowed`` rows) and no earlier round made it;
    it takes rank 1 + the least delta rank that derives it and up to ``k`` supports of that
    rank, as ``_admit`` does. The frontier is visited by rank, so a head's candidates come
    least rank first.

    Heads are told apart by a hash table of their packed ids or by a dense table indexed by
    value codes (``nv`` distinct values heads can take, 0 for none; ``bcode`` holds the codes
    of ``bval``, ``scode`` those of the seeds' columns): from the start with
    ``start_dense`` (a small graph's node pairs, which stay in cache), else once the hash
    table would hold ``switch`` heads (a load or a large insertion: a hash table of millions
    of heads missed the cache on every probe).

    Facts are indexed seeds first, then in the order they are made. Returns (each fact's
    row, -1 for a row never stored; the new facts' columns, rank and support count; per
    support, grouped by fact, a row of its fact, rule, B row and R body fact; rounds; the
    index of the first fact of the frontier left unexpanded, -1 when none is left).

    A round that would meet more than ``max_work`` (frontier fact, B row) pairs is left to
    the caller: vectorised rounds carry a wide frontier faster than this loop (a backbone's
    load), which is for the many narrow rounds.

    ``prefill``, when not empty, is the dense table made by the caller for a restricted run
    (a rederivation): ``PREFILLED - row`` at the code of each allowed row that is dead, -2
    (not new) everywhere else, so a head is told allowed or not by one look-up, without
    R's hash map or ``allowed``. ``room`` is how many such rows there are: the facts and
    supports a prefilled run can make are bounded by it (and ``k``), so its arrays are
    sized once and its rounds run whatever their width.

    ``rowtab``, when not empty, is R's rows by the codes of their values (``row_table``,
    -1: none): a new head's row is read there instead of probed in R's hash map (a small
    graph's up batch: the map's probes were half the kernel)."""
    arity = rcols.shape[1]
    ns = len(seeds)
    cap = max(16, 2 * ns)
    frow = np.empty(cap, dtype=np.int64)
    fcol = np.zeros((cap, arity), dtype=np.int64)
    frank = np.empty(cap, dtype=np.int64)
    fcount = np.zeros(cap, dtype=np.int64)
    sup = np.empty((cap, 4), dtype=np.int64)
    fcode = np.zeros((cap, arity), dtype=np.int64)
    for i in range(ns):
        frow[i] = seeds[i]
        for p in range(arity):
            fcol[i, p] = rcols[seeds[i], p]
            fcode[i, p] = scode[i, p]
        frank[i] = rrank[seeds[i]]
    use_dense = (start_dense and nv > 0) or len(prefill) > 0
    if len(prefill):
        dense = prefill
    else:
        dense = np.full(nv ** arity if use_dense else 1, EMPTY, dtype=np.int32)
    nf, nsup, tused = ns, 0, 0
    tkeys = np.full(64, EMPTY, dtype=np.int64)  # head key -> fact, or -2: not new
    tvals = np.empty(64, dtype=np.int64)
    lo, hi = 0, ns
    rounds = 0
    spans = np.empty((max(16, ns * (len(boff) - 1)), 2), dtype=np.int64)
    if len(prefill):
        frow = _grow_to(frow, ns + room)
        fcol = _grow_to(fcol, ns + room)
        frank = _grow_to(frank, ns + room)
        fcount = _grow_to(fcount, ns + room)
        fcode = _grow_to(fcode, ns + room)
        sup = _grow_to(sup, k * room)
    while hi > lo:
        work, spans = _closure_spans(lo, hi, fcol, boff, bkey, cidx, coff, clo, rjoin, spans)
        if work > max_work and not len(prefill):
            break
        rounds += 1
        grow = np.int64(0) if len(prefill) else work  # (a prefilled run's are sized)
        frow = _grow_to(frow, nf + grow)
        fcol = _grow_to(fcol, nf + grow)
        frank = _grow_to(frank, nf + grow)
        fcount = _grow_to(fcount, nf + grow)
        fcode = _grow_to(fcode, nf + grow)
        sup = _grow_to(sup, nsup + grow)
        if not use_dense and nv > 0 and tused + work > switch:
            use_dense = True  # the facts made so far move over; the others are asked again
            dense = np.full(nv ** arity, EMPTY, dtype=np.int32)
            for f in range(ns, nf):
                dense[fcode[f, 0] * nv + fcode[f, 1] if arity > 1 else fcode[f, 0]] = f
        if not use_dense and 2 * (tused + work) > len(tkeys):
            size = len(tkeys)
            while 2 * (tused + work) > size:
                size *= 4
            tkeys, tvals = _local_rehash(tkeys, tvals, size)
        nf, nsup, tused = _closure_round(lo, hi, nf, nsup, tused, frow, fcol, frank, fcount,
                                         sup, tkeys, tvals, fcode, bcode, dense, nv,
                                         use_dense, ralive,
                                         mkeys, mvals, mmask,
                                         mshift, boff, bkey, cidx, coff, clo, brow, bval, rjoin,
                                         hsrc, hidx, allowed, restrict, k, rowtab, spans)
        lo, hi = hi, nf
    # a fact's supports together, facts in order: a counting sort (numba's argsort of them
    # was a fifth of the kernel)
    at = np.empty(nf + 1, dtype=np.int64)
    at[ns] = 0
    for f in range(ns, nf):
        at[f + 1] = at[f] + fcount[f]
    grouped = np.empty((nsup, 4), dtype=np.int64)
    for j in range(nsup):
        f = sup[j, 0]
        grouped[at[f]] = sup[j]
        at[f] += 1
    return (frow[:nf], fcol[ns:nf], frank[ns:nf], fcount[ns:nf], grouped, rounds,
            lo if hi > lo else -1)



@njit(cache=True, nogil=True)
def head_codes(bval: np.ndarray, used: np.ndarray, scols: np.ndarray, max_span: np.int64
               ) -> tuple:  # pragma: no cover - compiled
    """``linear_closure``'s value codes: the sorted distinct values of ``bval``'s ``used``
    slots and of ``scols`` (the values heads can take), and each entry's code, its index
    there (0 in an unused slot). A table over the values' span, in three passes; empty
    results where the span passes ``max_span`` (the caller sorts then). A sort, a
    concatenation and two binary searches were a tenth of a small graph's up batch."""
    lo = np.int64(1) << 62
    hi = -lo
    for i in range(bval.shape[0]):
        for p in used:
            lo, hi = min(lo, bval[i, p]), max(hi, bval[i, p])
    for i in range(scols.shape[0]):
        for p in range(scols.shape[1]):
            lo, hi = min(lo, scols[i, p]), max(hi, scols[i, p])
    empty = np.empty(0, dtype=np.int64)
    if hi < lo or hi - lo + 1 > max_span:
        return empty, np.empty((0, 0), np.int64), np.empty((0, 0), np.int64)
    code = np.full(hi - lo + 1, -1, dtype=np.int32)  # (4 bytes a value of the span)
    for i in range(bval.shape[0]):
        for p in used:
            code[bval[i, p] - lo] = 0
    for i in range(scols.shape[0]):
        for p in range(scols.shape[1]):
            code[scols[i, p] - lo] = 0
    nv = 0
    for v in range(len(code)):
        if code[v] == 0:
            code[v] = nv
            nv += 1
    universe = np.empty(nv, dtype=np.int64)
    for v in range(len(code)):
        if code[v] >= 0:
            universe[code[v]] = lo + v
    bcode = np.zeros(bval.shape, dtype=np.int64)
    for i in range(bval.shape[0]):
        for p in used:
            bcode[i, p] = code[bval[i, p] - lo]
    scode = np.empty(scols.shape, dtype=np.int64)
    for i in range(scols.shape[0]):
        for p in range(scols.shape[1]):
            scode[i, p] = code[scols[i, p] - lo]
    return universe, bcode, scode


@njit(cache=True, nogil=True)
def below_index(cols: np.ndarray, alive: np.ndarray, n: np.int64, kcols: np.ndarray,
                vcols: np.ndarray, span_per_row: np.int64) -> tuple:  # pragma: no cover
    """The view of one rule's B that ``linear_closure`` and the rederivation kernels read:
    its alive rows among the first ``n`` ordered by join key (columns ``kcols``, two packed
    as ``keys.pack`` does), stably. Returns (keys, rows, values from columns ``vcols`` in
    two slots, 0 where a slot's column is -1, per key value from the least the index of
    its first row (``_b_span``'s offsets; empty where the keys span more than
    ``span_per_row`` values a row), the least key). Keys of a narrow span are placed by a
    counting sort, which gives the offsets too. Twelve array calls, a sort and a binary
    search per key value were a tenth of a small graph's up batch."""
    m = 0
    for r in range(n):
        if alive[r]:
            m += 1
    rows = np.empty(m, dtype=np.int64)
    keys = np.empty(m, dtype=np.int64)
    lo = np.int64(0)
    hi = np.int64(-1)
    j = 0
    for r in range(n):
        if alive[r]:
            k = np.int64(cols[r, kcols[0]])
            if len(kcols) == 2:
                k = (k << 31) | np.int64(cols[r, kcols[1]])
            rows[j], keys[j] = r, k
            if j == 0 or k < lo:
                lo = k
            if j == 0 or k > hi:
                hi = k
            j += 1
    span = hi - lo + 1 if m else np.int64(0)
    if m and span <= span_per_row * max(m, np.int64(1024)):
        offs = np.zeros(span + 1, dtype=np.int64)
        for i in range(m):
            offs[keys[i] - lo + 1] += 1
        for v in range(span):
            offs[v + 1] += offs[v]
        at = offs[:span].copy()
        srows = np.empty(m, dtype=np.int64)
        skeys = np.empty(m, dtype=np.int64)
        for i in range(m):  # rows ascending: the order within a key is stable
            q = keys[i] - lo
            srows[at[q]], skeys[at[q]] = rows[i], keys[i]
            at[q] += 1
    else:
        order = np.argsort(keys, kind="mergesort")
        srows, skeys = rows[order], keys[order]
        offs = np.empty(0, dtype=np.int64)
    vals = np.zeros((m, 2), dtype=np.int64)
    for i in range(m):
        for slot in range(len(vcols)):
            if vcols[slot] >= 0:
                vals[i, slot] = cols[srows[i], vcols[slot]]
    return skeys, srows, vals, offs, lo


@njit(cache=True, nogil=True)
def row_table(cols: np.ndarray, n: np.int64, universe: np.ndarray,
              max_span: np.int64) -> np.ndarray:  # pragma: no cover - compiled
    """R's rows by value codes for ``linear_closure``: per pair (or single) of codes of the
    sorted ``universe``, the row holding those values, -1 for none; rows with a value
    outside it are left out (no head can take it). Empty where the universe's values span
    more than ``max_span``."""
    arity = cols.shape[1]
    nv = len(universe)
    if not nv or universe[nv - 1] - universe[0] + 1 > max_span:
        return np.empty(0, dtype=np.int32)
    lo = universe[0]
    span = universe[nv - 1] - lo + 1
    code = np.full(span, -1, dtype=np.int64)
    for i in range(nv):
        code[universe[i] - lo] = i
    table = np.full(nv ** arity, -1, dtype=np.int32)
    for r in range(n):
        dk = np.int64(0)
        for p in range(arity):
            c = _code(code, lo, np.int64(cols[r, p]), np.int64(-1))
            if c < 0:
                dk = -1
                break
            dk = dk * nv + c
        if dk >= 0:
            table[dk] = r
    return table


@njit(cache=True, nogil=True)
def linear_rederive(heads: np.ndarray, rcols: np.ndarray, rrank: np.ndarray,
                    ralive: np.ndarray, mkeys: np.ndarray, mvals: np.ndarray, mmask: np.int64,
                    mshift: np.uint64, boff: np.ndarray, bkey: np.ndarray, cidx: np.ndarray,
                    coff: np.ndarray, clo: np.ndarray, brow: np.ndarray,
                    bval: np.ndarray, hkey: np.ndarray, rsrc: np.ndarray,
                    ridx: np.ndarray) -> tuple:  # pragma: no cover - compiled
    """Every derivation of the given R rows (a rederivation's suspects) by the linear rules
    ``R(h) :- B(b), R(r)`` whose R body fact is alive: the first rederivation step's join,
    solved from the head, in one pass.

    Rule i's alive B rows are sorted by the B columns the head's variables take, packed
    (``bkey``, keys matched against head columns ``hkey[i]``, the second -1 when one); R
    position p of the body takes slot ``ridx[i, p]`` of ``bval`` (``rsrc[i, p]`` 0) or head
    column ``ridx[i, p]`` (1). Returns per derivation (head index, rule, B row, R row, rank:
    one more than the R row's)."""
    arity = rcols.shape[1]
    nrules = len(boff) - 1
    bound = 0
    for j in range(len(heads)):  # a first pass bounds the output: B rows met
        h = heads[j]
        for i in range(nrules):
            e, end = _b_span(bkey, boff, cidx, coff, clo, i, _row_key(rcols, hkey, h, i))
            bound += end - e
    out = np.empty((bound, 5), dtype=np.int64)
    n = 0
    for j in range(len(heads)):
        h = heads[j]
        for i in range(nrules):
            e, end = _b_span(bkey, boff, cidx, coff, clo, i, _row_key(rcols, hkey, h, i))
            while e < end:
                v = bval[e, ridx[i, 0]] if rsrc[i, 0] == 0 else np.int64(rcols[h, ridx[i, 0]])
                if arity > 1:
                    w = bval[e, ridx[i, 1]] if rsrc[i, 1] == 0 else np.int64(
                        rcols[h, ridx[i, 1]])
                    v = (v << 31) | w
                ms = _slot(mkeys, mmask, mshift, v)
                if ms >= 0:
                    row = np.int64(mvals[ms])
                    if ralive[row]:
                        n = _derivation(out, n, j, i, brow[e], row, rrank[row] + 1)
                e += 1
    return out[:n]


@njit(cache=True, nogil=True)
def _derivation(out: np.ndarray, n: np.int64, j: np.int64, i: np.int64, b: np.int64,
                row: np.int64, rank: np.int64) -> np.int64:  # pragma: no cover - compiled
    """Row ``n`` of a rederivation step's output (head index, rule, B row, R row, rank);
    returns the next row."""
    out[n, 0] = j
    out[n, 1] = i
    out[n, 2] = b
    out[n, 3] = row
    out[n, 4] = rank
    return n + 1


@njit(cache=True, nogil=True)
def _code(code: np.ndarray, lo: np.int64, v: np.int64,
          other: np.int64) -> np.int64:  # pragma: no cover - compiled
    """Value ``v``'s code in ``code`` (indexed by value - ``lo``), ``other`` outside it."""
    return code[v - lo] if v >= lo and v < lo + len(code) else other


@njit(cache=True, nogil=True)
def dense_rederive(heads: np.ndarray, rcols: np.ndarray, rrank: np.ndarray, lo: np.int64,
                   code: np.ndarray, nv: np.int64, table: np.ndarray, boff: np.ndarray,
                   bkey: np.ndarray, cidx: np.ndarray, coff: np.ndarray, clo: np.ndarray,
                   brow: np.ndarray, bcode: np.ndarray, hkey: np.ndarray, rsrc: np.ndarray,
                   ridx: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """``linear_rederive`` with R's standing facts found in a table made for every row
    (``prefill_table`` with ``every``: ``ALIVE - row`` at the codes of each alive row's
    values; ``bcode``: the codes of the B values) instead of R's hash map: on a backbone
    the map is tens of megabytes and each of the step's probes missed the cache, where the
    table of node pairs is a few. ``heads`` sorted: their columns are read in order."""
    arity = rcols.shape[1]
    nrules = len(boff) - 1
    out = np.empty((max(16, len(heads)), 5), dtype=np.int64)
    n = 0
    for j in range(len(heads)):
        h = heads[j]
        hc0 = _code(code, lo, np.int64(rcols[h, 0]), nv - 1)
        hc1 = _code(code, lo, np.int64(rcols[h, 1]), nv - 1) if arity > 1 else np.int64(0)
        for i in range(nrules):
            e, end = _b_span(bkey, boff, cidx, coff, clo, i, _row_key(rcols, hkey, h, i))
            if n + end - e > len(out):
                out = _grow_to(out, n + end - e)
            # per R position: a B slot (>= 0), or the head's code (-1 - column)
            q0 = ridx[i, 0] if rsrc[i, 0] == 0 else -1 - ridx[i, 0]
            q1 = ridx[i, 1] if rsrc[i, 1] == 0 else -1 - ridx[i, 1]
            k0 = hc0 if q0 == -1 else hc1
            k1 = hc0 if q1 == -1 else hc1
            while e < end:
                dk = bcode[e, q0] if q0 >= 0 else k0
                if arity > 1:
                    dk = dk * nv + (bcode[e, q1] if q1 >= 0 else k1)
                g = np.int64(table[dk])
                if g <= ALIVE:
                    row = ALIVE - g
                    n = _derivation(out, n, j, i, brow[e], row, rrank[row] + 1)
                e += 1
    return out[:n]


@njit(cache=True, nogil=True)
def _get_or_add(table: np.ndarray, vals: np.ndarray, mask: np.int64, shift: np.uint64,
                k: np.int64, new: np.int64) -> np.int64:  # pragma: no cover - compiled
    """The value of ``k``, or ``new`` after inserting ``k`` with it (-1 - new: so the
    caller tells them apart); the table must have room."""
    s = _home(k, shift)
    while True:
        seen = table[s]
        if seen == k:
            return np.int64(vals[s])
        if seen == EMPTY:
            table[s] = k
            vals[s] = new
            return -1 - new
        s = (s + 1) & mask


@njit(cache=True, nogil=True)
def get_or_add(table: np.ndarray, vals: np.ndarray, mask: np.int64, shift: np.uint64,
               keys: np.ndarray, start: np.int64
               ) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - compiled
    """The value of each (non-negative) key, inserting the absent ones with values
    ``start``, ``start + 1``, ... in order of first appearance; returns (values, index of
    each inserted key's first appearance). One pass where a lookup, a ``unique`` of the
    misses and an insert were three."""
    out = np.empty(len(keys), dtype=np.int64)
    fresh = np.empty(len(keys), dtype=np.int64)
    nf = 0
    for i in range(len(keys)):
        v = _get_or_add(table, vals, mask, shift, keys[i], start + nf)
        if v < 0:
            v = -1 - v
            fresh[nf] = i
            nf += 1
        out[i] = v
    return out, fresh[:nf]


@njit(cache=True, nogil=True)
def chain_intern(table: np.ndarray, vals: np.ndarray, mask: np.int64, shift: np.uint64,
                 rows: np.ndarray, start: np.int64
                 ) -> tuple[np.ndarray, np.int64]:  # pragma: no cover - compiled
    """``chain_keys`` interning every prefix pair not seen before (ids from ``start``);
    returns (keys, how many pairs were added). Ids must be non-negative."""
    n, w = rows.shape
    out = np.empty(n, dtype=np.int64)
    nf = np.int64(0)
    for i in range(n):
        p = np.int64(rows[i, 0])
        for j in range(1, w - 1):
            v = _get_or_add(table, vals, mask, shift, (p << 31) | np.int64(rows[i, j]),
                            start + nf)
            if v < 0:
                v = -1 - v
                nf += 1
            p = v
        out[i] = (p << 31) | np.int64(rows[i, w - 1])
    return out, nf


@njit(cache=True, nogil=True)
def least_keyed_lists(head: np.ndarray, tail: np.ndarray, nil: np.int64, cells: np.int64,
                      small: np.int64, atom_rank: np.ndarray, keys: np.ndarray,
                      lists: np.ndarray, groups: np.ndarray,
                      n_groups: np.int64) -> np.ndarray:  # pragma: no cover - compiled
    """Per group, the index of its candidate with the least key and, among those, the
    least list (the first of equal ones); -2 in slot 0 if an element was itself a list:
    an arg-min's choice in one pass instead of two sorts and a dozen array calls."""
    best = np.full(n_groups, -1, dtype=np.int64)
    for i in range(len(keys)):
        g = groups[i]
        b = best[g]
        if b < 0 or keys[i] < keys[b]:
            best[g] = i
            continue
        if keys[i] > keys[b]:
            continue
        less = _list_less(lists[i], lists[b], head, tail, nil, cells, small, atom_rank)
        if less < 0:
            best[0] = -2
            return best
        if less == 1:
            best[g] = i
    return best


@njit(cache=True, nogil=True)
def counting_order(keys: np.ndarray, lo: np.int64, span: np.int64
                   ) -> np.ndarray:  # pragma: no cover - compiled
    """The stable sorting permutation of integer ``keys`` that all lie in ``lo..lo+span-1``:
    a counting sort, O(len + span). NumPy's stable argsort of int32/int64 is a timsort
    (about 30 ns an element on a shared machine: 0.2 ms for 7,000 index entries, 47 ms for
    a backbone batch's 800,000), and the keys it sorts here are rows, so their span is small."""
    count = np.zeros(span + 1, dtype=np.int64)
    for i in range(len(keys)):
        count[keys[i] - lo + 1] += 1
    for j in range(span):
        count[j + 1] += count[j]
    out = np.empty(len(keys), dtype=np.int64)
    for i in range(len(keys)):
        j = keys[i] - lo
        out[count[j]] = i
        count[j] += 1
    return out


def stable_order(keys: np.ndarray) -> np.ndarray:
    """``np.argsort(keys, kind="stable")``, by ``counting_order`` when the keys' span is at
    most 32 times their number (plus 16 Ki): a multimap's keys are rows. Measured: 460,000
    keys over 1.3 M rows 37 ms by argsort, 10 by counting; 50,000: 2.9 against 0.8; 10,000:
    0.44 against 0.57."""
    if len(keys) < 64 or keys.dtype.kind != "i":
        return np.argsort(keys, kind="stable")
    lo, hi = int(keys.min()), int(keys.max())
    if hi - lo > 32 * len(keys) + 16_384:
        return np.argsort(keys, kind="stable")
    # one argument type whatever the caller's array (int32, strided or read-only ones are
    # other Numba signatures, each compiled or loaded on first use: 4-370 ms in a batch)
    return counting_order(np.array(keys, dtype=np.int64), np.int64(lo), np.int64(hi - lo + 1))


@njit(cache=True, nogil=True)
def merge_runs(k1: np.ndarray, v1: np.ndarray, k2: np.ndarray, v2: np.ndarray
               ) -> tuple:  # pragma: no cover - compiled
    """Two key-sorted runs as one, ``k1``'s entries first among equal keys (a stable merge):
    one pass, where a stable argsort of the concatenation and two gathers were three."""
    n1, n2 = len(k1), len(k2)
    keys = np.empty(n1 + n2, dtype=k1.dtype)
    vals = np.empty(n1 + n2, dtype=v1.dtype)
    i = j = o = 0
    while i < n1 and j < n2:
        if k2[j] < k1[i]:
            keys[o] = k2[j]
            vals[o] = v2[j]
            j += 1
        else:
            keys[o] = k1[i]
            vals[o] = v1[i]
            i += 1
        o += 1
    while i < n1:
        keys[o] = k1[i]
        vals[o] = v1[i]
        i += 1
        o += 1
    while j < n2:
        keys[o] = k2[j]
        vals[o] = v2[j]
        j += 1
        o += 1
    return keys, vals


@njit(cache=True, nogil=True)
def drop_heads(rule: np.ndarray, head_code: np.ndarray, alive: np.ndarray, n: np.int64,
               codes: np.ndarray, newid: np.ndarray) -> tuple:  # pragma: no cover - compiled
    """Kill every alive support among the first ``n`` whose rule's head relation is one of
    ``codes`` (none: only the ids below) and give each support left alive its id after a
    compaction (``newid``, -1 for the dead); returns (how many died, how many are left):
    ``Supports.drop_heads``'s five passes over every support and a compaction's numbering
    in one."""
    dropped = 0
    kept = 0
    for s in range(n):
        newid[s] = -1
        if alive[s]:
            c = head_code[rule[s]]
            for j in range(len(codes)):
                if c == codes[j]:
                    alive[s] = False
                    dropped += 1
                    break
            if alive[s]:
                newid[s] = kept
                kept += 1
    return dropped, kept


@njit(cache=True, nogil=True)
def move_kept(newid: np.ndarray, n: np.int64, head: np.ndarray, rule: np.ndarray,
              body: np.ndarray, to_head: np.ndarray, to_rule: np.ndarray,
              to_body: np.ndarray) -> None:  # pragma: no cover - compiled
    """A compaction's copy: support ``s`` of the first ``n`` goes to slot ``newid[s]`` of the
    ``to_`` arrays, or nowhere (-1). One pass over the ids, where a gather per array first
    made the kept ids (``flatnonzero``, ``arange``, a scatter: three passes and their
    arrays)."""
    for s in range(n):
        t = newid[s]
        if t >= 0:
            to_head[t] = head[s]
            to_rule[t] = rule[s]
            for j in range(body.shape[1]):
                to_body[t, j] = body[s, j]


@njit(cache=True, nogil=True)
def ledger_plain(fns: np.ndarray, signs: np.ndarray, freg: np.ndarray, sign: np.ndarray,
                 fact: np.ndarray, ins: np.ndarray, plus: np.int8, deleted: np.int8
                 ) -> tuple:  # pragma: no cover - compiled
    """``ColumnLedger.plain``'s register writes in one pass over the batch's updates (fact
    numbers ``fns``, ``signs`` the bytes ``+``/``-``): each register named takes its last update
    of the batch, in register order. Returns (facts that appeared, facts that vanished, and
    per register written: register, fact, is-deletion, the update's index, inserted-ever;
    and how many more registers hold a deletion of what was never inserted, the ledger's
    pending deletions). Its dozen array passes (a sort for the last updates, an ``isin``)
    were 50-60 µs of a small graph's batch whatever its size."""
    m = len(fns)
    reg = np.empty(m, dtype=np.int64)
    minus = np.empty(m, dtype=np.bool_)
    for i in range(m):
        reg[i] = freg[fns[i]]
        minus[i] = signs[i] == 45  # '-'
    order = np.argsort(reg, kind="mergesort")  # stable: a register's updates in batch order
    appeared = np.empty(m, dtype=np.int64)
    vanished = np.empty(m, dtype=np.int64)
    r_out = np.empty(m, dtype=np.int64)
    f_out = np.empty(m, dtype=np.int64)
    neg_out = np.empty(m, dtype=np.bool_)
    last_out = np.empty(m, dtype=np.int64)
    ins_out = np.empty(m, dtype=np.bool_)
    na = nv = g = pend = 0
    j = 0
    while j < m:
        r = reg[order[j]]
        k = j
        any_plus = False
        while k < m and reg[order[k]] == r:
            if not minus[order[k]]:
                any_plus = True
            k += 1
        i = order[k - 1]
        f, neg = fns[i], minus[i]
        held = sign[r] == plus
        was = fact[r]
        if not neg and (not held or was != f):
            appeared[na] = f
            na += 1
        if held and (neg or was != f):
            vanished[nv] = was
            nv += 1
        # a deletion of what was never inserted: did the batch insert it?
        got = (not neg) or ins[r] or any_plus
        if sign[r] == deleted and not ins[r]:
            pend -= 1
        if neg and not got:
            pend += 1
        sign[r] = deleted if neg else plus
        fact[r] = f
        ins[r] = got
        r_out[g], f_out[g], neg_out[g], last_out[g], ins_out[g] = r, f, neg, i, got
        g += 1
        j = k
    return (appeared[:na], vanished[:nv], r_out[:g], f_out[:g], neg_out[:g], last_out[:g],
            ins_out[:g], pend)


@njit(cache=True, nogil=True)
def copy_supports(src: np.ndarray, rows: np.ndarray, first: np.ndarray, s_alive: np.ndarray,
                  s_body: np.ndarray, alive: np.ndarray) -> tuple:  # pragma: no cover
    """The support of each standing copy ``rows[i]`` of body row ``src[i]`` (copies.py):
    its first kept support, which must be alive and hold ``src[i]``; False where one is
    not (the caller goes the general way)."""
    out = np.empty(len(src), dtype=np.int64)
    n = 0
    for i in range(len(src)):
        c = rows[i]
        if c < 0 or not alive[c]:
            continue  # no copy stands: nothing to kill
        s = first[c] if c < len(first) else -1
        if s < 0 or not s_alive[s] or s_body[s, 0] != src[i]:
            return out[:0], False
        out[n] = s
        n += 1
    return out[:n], True


@njit(cache=True, nogil=True)
def base_rows(fns: np.ndarray, frel: np.ndarray, row: np.ndarray
              ) -> tuple:  # pragma: no cover - compiled
    """``BaseIds.rows`` in the usual case, in one pass: the kept row of each fact
    ``fns``, the relation code of the first, and whether every fact is of that relation
    with a row kept (else the caller goes the general way). Its half-dozen NumPy calls
    (gathers, a minimum and maximum, masks) cost a small batch 50 µs after other work."""
    m = len(fns)
    out = np.empty(m, dtype=np.int64)
    code = frel[fns[0]] if m else -1
    simple = True
    for i in range(m):
        f = fns[i]
        out[i] = row[f]
        if out[i] < 0 or frel[f] != code:
            simple = False
    return out, np.int64(code), simple


@njit(cache=True, nogil=True)
def net_rows(rows: np.ndarray, alive: np.ndarray, before: np.ndarray
             ) -> tuple:  # pragma: no cover - compiled
    """The batch's net change of a relation from the distinct rows it touched: (rows alive
    now and not before, rows alive before and not now). Two gathers, two masks and two
    compressions were six passes over every row a stratum derived afresh touched."""
    added = np.empty(len(rows), dtype=np.int64)
    removed = np.empty(len(rows), dtype=np.int64)
    na = nr = 0
    for i in range(len(rows)):
        r = rows[i]
        if alive[r] and not before[r]:
            added[na] = r
            na += 1
        elif before[r] and not alive[r]:
            removed[nr] = r
            nr += 1
    return added[:na], removed[:nr]


@njit(cache=True, nogil=True)
def renumber_run(off: np.ndarray, keys: np.ndarray, vals: np.ndarray, new: np.ndarray
                 ) -> tuple:  # pragma: no cover - compiled
    """One index run's values mapped through ``new`` (a compaction's new support ids, -1:
    dropped), dropping entries whose value is: a run kept as offsets (``off`` not empty:
    key ``x``'s entries are ``off[x]:off[x + 1]``) gets its offsets counted off the entries
    kept, a run of keys (``keys``) its keys kept beside them. Returns (offsets, keys,
    values), int32 values. One pass over the entries where a gather, a mask, a prefix sum
    and two compressions each passed over millions (americas: a compaction's renumbering
    was 90-120 ms of its 140-190)."""
    m = 0
    out_vals = np.empty(len(vals), dtype=np.int32)
    if len(off):
        out_off = np.empty(len(off), dtype=np.int32)
        for x in range(len(off) - 1):
            out_off[x] = m
            for e in range(off[x], off[x + 1]):
                nv = new[vals[e]]
                if nv >= 0:
                    out_vals[m] = nv
                    m += 1
        out_off[len(off) - 1] = m
        return out_off, keys[:0], out_vals[:m]
    out_keys = np.empty(len(keys), dtype=keys.dtype)
    for e in range(len(vals)):
        nv = new[vals[e]]
        if nv >= 0:
            out_keys[m] = keys[e]
            out_vals[m] = nv
            m += 1
    return off[:0].astype(np.int32), out_keys[:m], out_vals[:m]


@njit(cache=True, nogil=True)
def first_kept(first: np.ndarray, alive: np.ndarray, head: np.ndarray, rule: np.ndarray,
               head_code: np.ndarray, code: np.int64, k: np.int64, n: np.int64,
               newid: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """Per row of relation ``code``, the new id of the first alive support of its block
    (``first``: the block's first support id, -1 for none; a block holds up to ``k``
    supports of that head), or -1: ``Supports.compact``'s loop over K in one pass."""
    out = np.full(len(first), -1, dtype=np.int32)
    for r in range(len(first)):
        s0 = first[r]
        if s0 < 0:
            continue
        for j in range(k):
            c = s0 + j
            if c < n and alive[c] and head[c] == r and head_code[rule[c]] == code:
                out[r] = newid[c]
                break
    return out


@njit(cache=True, nogil=True)
def hide_all(n: np.int64, alive: np.ndarray, nsup: np.ndarray, touched: np.ndarray,
             tbefore: np.ndarray) -> tuple:  # pragma: no cover - compiled
    """Hide every alive row among the first ``n`` and clear its kept-support count, marking
    the rows the batch had not touched yet touched ("alive before"); returns those rows and
    how many were hidden. A stratum derived afresh starts so: six array passes over every
    row of the relation and their temporaries in one.

    FLIP: a row moves in or out of the view only in this kernel, ``kill_step`` and
    ``revive``, each with the same few lines (set ``alive``; where the batch had not touched
    the row yet, mark it touched, keep what it was before and list it in ``first``). They
    were one helper, but a call passing four arrays cost about 18 ns in reference counts,
    four times the work: TataNld's 20,449 rows hid in 384 µs through it, 63 written out."""
    first = np.empty(n, dtype=np.int64)
    f = 0
    hidden = 0
    for r in range(n):
        if alive[r]:
            nsup[r] = 0
            hidden += 1
            alive[r] = False
            if not touched[r]:  # FLIP
                touched[r] = True
                tbefore[r] = True
                first[f] = r
                f += 1
    return first[:f], hidden


@njit(cache=True, nogil=True)
def store_supports(head: np.ndarray, rule: np.ndarray, body: np.ndarray, start: np.int64,
                   s_head: np.ndarray, s_rule: np.ndarray, s_body: np.ndarray,
                   s_alive: np.ndarray, codes: np.ndarray, brows: np.ndarray
                   ) -> tuple:  # pragma: no cover - compiled
    """``Supports.add``'s writes in one pass: support ``start + i`` gets head row, rule and
    body rows (a gid's row bits; -1 stays -1, also in ``brows``, body rows by column, for
    the index) and is made alive. Returns the index of the first support of each head's
    block, and (least and largest head relation code, largest head row, least and largest
    rule): what the caller's bookkeeping needs, without passes of its own. ``codes`` (w x
    3, filled here) is per body column the least and largest relation code used and how
    many entries use it, so the caller indexes a column of one relation (the usual case)
    with no split. A dozen array passes and their temporaries were 120 µs a call whatever
    the size (a stratum derived afresh makes two or three calls). The row bits are
    ``supports._ROW_BITS`` (34)."""
    m, w = body.shape
    mask = np.int64((1 << 34) - 1)
    for j in range(w):
        codes[j, 0], codes[j, 1], codes[j, 2] = np.int64(1) << 40, -1, 0
    info = np.empty(5, dtype=np.int64)
    info[0], info[1], info[2] = np.int64(1) << 40, -1, -1
    info[3], info[4] = np.int64(1) << 40, -1
    starts = np.empty(m, dtype=np.int64)
    ns = 0
    for i in range(m):
        s = start + i
        h = head[i]
        if i == 0 or h != head[i - 1]:
            starts[ns] = i
            ns += 1
            info[0] = min(info[0], h >> 34)
            info[1] = max(info[1], h >> 34)
            info[2] = max(info[2], h & mask)
        info[3] = min(info[3], rule[i])
        info[4] = max(info[4], rule[i])
        s_head[s] = h & mask
        s_rule[s] = rule[i]
        s_alive[s] = True
        for j in range(w):
            b = body[i, j]
            if b >= 0:
                s_body[s, j] = b & mask
                brows[j, i] = b & mask
                c = b >> 34
                if c < codes[j, 0]:
                    codes[j, 0] = c
                if c > codes[j, 1]:
                    codes[j, 1] = c
                codes[j, 2] += 1
            else:
                s_body[s, j] = -1
                brows[j, i] = -1
    return starts[:ns], info


@njit(cache=True, nogil=True)
def mark_first(first: np.ndarray, head: np.ndarray, starts: np.ndarray,
               start: np.int64) -> None:  # pragma: no cover - compiled
    """``Supports.first`` of one relation: each new block's head row gets the block's first
    support id (``start`` + its index in the call)."""
    mask = np.int64((1 << 34) - 1)
    for i in range(len(starts)):
        first[head[starts[i]] & mask] = start + starts[i]


_WARM = False


def compiled(kernel: Any) -> bool:
    """Whether ``kernel`` compiled a signature in this process (Numba's cache missed)."""
    return bool(kernel.stats.cache_misses)


def warm(on_compile: Callable[[], None] | None = None) -> None:
    """Load, once per process, the machine code of the kernels that only maintenance calls,
    for the argument types it passes: a kernel's first call reads it from Numba's cache
    (about 3 ms each), which a batch would otherwise pay the first time it needs one (a
    first stratum derived afresh paid 2.5 ms of it in the peers bench). ``on_compile`` is
    called once, before the rest, when the first kernel was not in the cache: after an
    install or an upgrade every kernel compiles now and in the first batch (about 27 s on
    2 cores, 14 of them here), which a caller should say rather than sit silent through."""
    global _WARM
    if _WARM:
        return
    _WARM = True
    i16, i32, i64 = np.zeros(4, np.int16), np.zeros(4, np.int32), np.zeros(4, np.int64)
    flags, one = np.zeros(4, bool), np.int64(1)
    counting_order(i64, np.int64(0), one)
    if on_compile is not None and compiled(counting_order):
        on_compile()
    for keys in (i32, i64):
        merge_runs(keys, i32, keys, i32)
        dense_offsets(keys, np.int64(1))
    drop_heads(i16, i64[:1], flags, np.int64(4), i64[:1], i32)  # a compaction's: new ids
    move_kept(i32, np.int64(0), i32, i16, np.zeros((4, 2), np.int32), i32, i16,
              np.zeros((4, 2), np.int32))
    first_kept(np.full(4, -1, np.int32), flags, i32, i16, i64[:1], np.int64(0), np.int64(2),
               np.int64(4), i32)
    renumber_run(dense_offsets(i32, np.int64(1)), i64[:0], i32, i32)  # an index's runs
    renumber_run(i32[:0], i32, i32, i32)
    expand_dense(dense_offsets(i32, np.int64(1)), i32, i64)
    prefill_table(np.zeros((4, 2), np.int32), i64, flags, np.int64(16), np.int64(0))
    # ... and its halves, for a coding kept across batches (``LinearClosure.prefilled``)
    lo, code, nv = value_codes(np.zeros((4, 2), np.int32), i64, np.int64(4), np.int64(16))
    prefill_rows(np.zeros((4, 2), np.int32), i64, flags, lo, code, nv, np.int64(4))
    # what a program's first deletion calls (finding the vanished rows, the kill, the first
    # rederivation step): 18-20 ms the first link down of a process paid (peers' k=1 p99)
    table, shift = np.full(4, EMPTY, np.int64), np.uint64(62)
    lookup(table, i32, np.int64(3), shift, i64[:0], np.int64(-1))
    for width in (np.int64, np.int32):  # rows of ids as the batch gives them / as stored
        chain_keys(table, i32, np.int64(3), shift, np.zeros((0, 3), width))
    zero = np.int64(0)  # and an arg-min's first choice among list payloads (best routes)
    least_keyed_lists(i32, i32, zero, zero, zero, i64, i64[:0], i64[:0], i64[:0], zero)
    expand(i32, i32, i32[:0])
    kill_step(i64[:0], flags, i16, i32, i64, one, np.zeros(4, np.int8), flags, flags, flags)
    runs = (i32[:0],) * 4  # ``relation.KILL_RUNS``
    kill_reach(i64[:0], one, runs, runs, one, runs, runs, one, one, flags, i16, i32, i64, one,
               np.zeros(4, np.int8), flags, flags, flags)
    hide_all(np.int64(0), flags, np.zeros(4, np.int8), flags, flags)
    copy_supports(i64[:0], i64[:0], i32, flags, np.zeros((4, 2), np.int32), flags)  # copies.py
    pairs = np.zeros((1, 2), np.int64)
    linear_rederive(i64[:0], np.zeros((4, 2), np.int32), i32, flags, table, i32,
                    np.int64(3), shift, np.zeros(2, np.int64), i64, i64, np.zeros(2, np.int64),
                    i64[:1], i64, np.zeros((4, 2), np.int64), pairs, pairs, pairs)
    # an up batch of many seeds on a small relation (``closure.ROWS_SHARE``)
    row_table(np.zeros((4, 2), np.int32), one, i64[:1], one)
    row_table(np.zeros((4, 1), np.int32), one, i64[:1], one)
    # a rederivation of many suspects (``closure.LinearClosure.every_pays``)
    dense_rederive(i64[:0], np.zeros((4, 2), np.int32), i32, zero, i64, one, i32,
                   np.zeros(2, np.int64), i64, np.zeros(2, np.int64), i64[:1], i64, i64,
                   np.zeros((4, 2), np.int64), pairs, pairs, pairs)


@njit(cache=True, nogil=True)
def dense_offsets(keys: np.ndarray, n: np.int64) -> np.ndarray:  # pragma: no cover
    """Offsets of a key-sorted run whose keys lie in 0..n-1: key k's entries are
    ``offsets[k]:offsets[k + 1]`` (a count per key, then a running sum: no branch on the
    data, which a merge-like walk of keys and range mispredicted at every key)."""
    off = np.zeros(n + 1, dtype=np.int32)  # a run holds fewer than 2**31 entries
    for i in range(len(keys)):
        off[keys[i] + 1] += 1
    for k in range(n):
        off[k + 1] += off[k]
    return off


@njit(cache=True, nogil=True)
def expand_dense(off: np.ndarray, vals: np.ndarray, q: np.ndarray
                 ) -> tuple:  # pragma: no cover - compiled
    """``expand`` through ``dense_offsets``: every (probe index, value) of the run whose key
    equals the probe's, without a binary search (a search of a run of millions missed the
    cache at every step)."""
    n = len(off) - 1
    total = 0
    for i in range(len(q)):
        k = q[i]
        if 0 <= k < n:
            total += off[k + 1] - off[k]
    qi = np.empty(total, dtype=np.int64)
    out = np.empty(total, dtype=np.int64)
    j = 0
    for i in range(len(q)):
        k = q[i]
        if 0 <= k < n:
            for p in range(off[k], off[k + 1]):
                qi[j] = i
                out[j] = vals[p]
                j += 1
    return qi, out


@njit(cache=True, nogil=True)
def value_codes(cols: np.ndarray, rows: np.ndarray, every: np.int64, max_slots: np.int64
                ) -> tuple:  # pragma: no cover - compiled
    """The value coding of ``prefill_table``: (lowest value, code per value - lowest, nv),
    nv 0 when the values span more than ``max_slots`` or nv ** arity would. The values of
    ``rows`` are coded, or with ``every`` (the relation's row count) those of all its rows,
    in order; the last code, nv - 1, is every value not among them."""
    arity = cols.shape[1]
    empty = np.empty(0, dtype=np.int64)
    if not len(rows):
        return np.int64(0), empty, np.int64(0)
    coded = rows if every == 0 else np.arange(every)
    lo = np.int64(cols[coded[0], 0])
    hi = lo
    for i in range(len(coded)):
        for p in range(arity):
            v = np.int64(cols[coded[i], p])
            lo = min(lo, v)
            hi = max(hi, v)
    span = hi - lo + 1
    if span > max_slots:
        return lo, empty, np.int64(0)
    code = np.zeros(span, dtype=np.int64)
    for i in range(len(coded)):
        for p in range(arity):
            code[np.int64(cols[coded[i], p]) - lo] = 1
    nv = np.int64(0)
    for j in range(span):
        if code[j]:
            code[j] = nv
            nv += 1
        else:
            code[j] = -1
    nv += 1  # the code of any other value
    if nv ** arity > max_slots:
        return lo, empty, np.int64(0)
    for j in range(span):
        if code[j] < 0:
            code[j] = nv - 1
    return lo, code, nv


@njit(cache=True, nogil=True)
def prefill_rows(cols: np.ndarray, rows: np.ndarray, alive: np.ndarray, lo: np.int64,
                 code: np.ndarray, nv: np.int64, every: np.int64
                 ) -> tuple:  # pragma: no cover - compiled
    """The table of ``prefill_table`` for a coding ``value_codes`` made: (table, room)."""
    arity = cols.shape[1]
    table = np.full(nv ** arity, -2, dtype=np.int32)
    for r in range(every):
        if alive[r]:
            dk = code[np.int64(cols[r, 0]) - lo]
            if arity > 1:
                dk = dk * nv + code[np.int64(cols[r, 1]) - lo]
            table[dk] = ALIVE - r
    room = np.int64(0)
    for i in range(len(rows)):
        r = rows[i]
        if alive[r]:
            continue
        dk = code[np.int64(cols[r, 0]) - lo]
        if arity > 1:
            dk = dk * nv + code[np.int64(cols[r, 1]) - lo]
        table[dk] = PREFILLED - r
        room += 1
    return table, room


@njit(cache=True, nogil=True)
def prefill_table(cols: np.ndarray, rows: np.ndarray, alive: np.ndarray,
                  max_slots: np.int64, every: np.int64) -> tuple:  # pragma: no cover - compiled
    """``closure.Prefill`` of the given rows of a relation (``cols``: its id columns, arity
    1 or 2): (lowest value, code per value - lowest, nv, table, room), nv 0 when the values
    span more than ``max_slots`` or the table would have more slots (``value_codes``).

    With ``every`` (the relation's row count, else 0) the values of all its rows are coded
    and each alive row ``r`` is entered as ``ALIVE - r``: the table then also finds any
    standing fact by its values (``dense_rederive``)."""
    lo, code, nv = value_codes(cols, rows, every, max_slots)
    if not nv:
        return lo, code, nv, np.empty(0, dtype=np.int32), np.int64(0)
    table, room = prefill_rows(cols, rows, alive, lo, code, nv, every)
    return lo, code, nv, table, room
