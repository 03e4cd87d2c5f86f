"""The failure-scenario file format: what should break, when, in a topology the simulator feeds
to the monitor.

One step per line; ``#`` starts a comment; names with spaces or ``,``/``|`` are quoted
(``"New York"``), because Topology Zoo names are city names. Times are seconds (numbers)::

    seed 7                                   # default random seed (--seed overrides)
    at 10 fail link a b                      # both directions
    at 20 recover link a b
    at 30 fail node c                        # every link of c, both directions
    at 40 recover node c
    at 50 flap link a b every 2 times 5      # down at 50, 52, ... 58; up 1 s (every/2) later
    at 60 partition a,b,c | d,e              # fail every link crossing the cut
    at 70 heal a,b,c | d,e                   # recover every link crossing the cut
    random failures mtbf=100 mttr=10 until=1000 [from=0] [on=links|nodes]

Parsing checks syntax only; names are checked against the topology when the scenario runs
(:func:`collectors.simulate.run`), still reported as ``file:line``, so one scenario file can be
written once and checked against whichever topology it is run on.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from netrules.errors import CollectorError, Diagnostic, SourceLoc

__all__ = ["Step", "RandomFailures", "Scenario", "scenario_error"]

ACTIONS = ("fail_link", "recover_link", "fail_node", "recover_node", "flap", "partition", "heal")


@dataclass(frozen=True)
class Step:
    """One scripted step. ``nodes`` is (a, b) for link actions and (c,) for node actions;
    ``groups`` are the two sides of a partition/heal; ``every``/``times`` describe a flap."""

    time: float
    action: str
    nodes: tuple[str, ...] = ()
    groups: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
    every: float = 0.0
    times: int = 0
    text: str = ""
    where: SourceLoc | None = field(default=None, compare=False)


@dataclass(frozen=True)
class RandomFailures:
    """Independent failures of every link (or node): up-times ~ Exp(mean mtbf), repair times
    ~ Exp(mean mttr), in [start, until). Nothing happens at or after ``until``: what is down
    then stays down, so the window is exactly what was asked for."""

    mtbf: float
    mttr: float
    until: float
    start: float = 0.0
    on: str = "links"
    text: str = ""
    where: SourceLoc | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Scenario:
    """A named list of steps plus random-failure processes; ``seed`` makes it replayable."""

    name: str = "sim"
    steps: tuple[Step, ...] = ()
    random: tuple[RandomFailures, ...] = ()
    seed: int = 0
    source: str | None = field(default=None, compare=False, repr=False)

    # ------------------------------------------------------------------ constructors

    @classmethod
    def load(cls, path: str | Path, name: str | None = None) -> Scenario:
        """Parse a scenario file; the scenario is named after the file unless ``name``."""
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise CollectorError(f"{p}: cannot read scenario: {err}") from err
        return cls.parse(text, str(p), name=name or p.stem)

    @classmethod
    def parse(cls, text: str, file: str = "<scenario>", name: str = "sim") -> Scenario:
        steps: list[Step] = []
        randoms: list[RandomFailures] = []
        seed = 0
        for lineno, raw in enumerate(text.splitlines(), 1):
            parsed = _parse_line(raw, file, lineno, text)
            if isinstance(parsed, Step):
                steps.append(parsed)
            elif isinstance(parsed, RandomFailures):
                randoms.append(parsed)
            elif isinstance(parsed, int):
                seed = parsed
        return cls(name, tuple(steps), tuple(randoms), seed, text)

    @classmethod
    def from_flags(
        cls,
        fail_links: Sequence[tuple[str, str]] = (),
        fail_nodes: Sequence[str] = (),
        random_failures: str | tuple[float, float, float] | None = None,
        seed: int | None = None,
        at: float = 1.0,
        name: str = "cli",
        base: Scenario | None = None,
    ) -> Scenario:
        """The CLI's flags as a scenario, appended to ``base`` (a scenario file) if given.

        Flag failures all happen at time ``at`` (default 1, just after the initial topology at
        0), as one batch; ``random_failures`` is ``"MTBF,MTTR,UNTIL"`` or a 3-tuple."""
        steps: list[Step] = []
        for a, b in fail_links:
            steps.append(Step(at, "fail_link", (a, b), text=f"--fail-link {a} {b}",
                              where=SourceLoc("--fail-link", 1, 1)))
        for c in fail_nodes:
            steps.append(Step(at, "fail_node", (c,), text=f"--fail-node {c}",
                              where=SourceLoc("--fail-node", 1, 1)))
        randoms: list[RandomFailures] = []
        if random_failures is not None:
            if isinstance(random_failures, str):
                parts = random_failures.split(",")
                try:
                    if len(parts) != 3:
                        raise ValueError
                    mtbf, mttr, until = (float(x) for x in parts)
                except ValueError:
                    raise CollectorError(
                        f"--random-failures: expected MTBF,MTTR,UNTIL (numbers), "
                        f"not {random_failures!r}") from None
            else:
                mtbf, mttr, until = random_failures
            where = SourceLoc("--random-failures", 1, 1)
            _check_random(mtbf, mttr, until, 0.0, "links", where, None)
            randoms.append(RandomFailures(mtbf, mttr, until,
                                          text=f"random failures mtbf={mtbf:g} mttr={mttr:g} "
                                               f"until={until:g}", where=where))
        if base is None:
            return cls(name, tuple(steps), tuple(randoms), seed or 0)
        return replace(base, steps=base.steps + tuple(steps), random=base.random + tuple(randoms),
                       seed=base.seed if seed is None else seed)


# ---------------------------------------------------------------------------- parsing


def scenario_error(where: SourceLoc | None, message: str, source: str | None = None
                   ) -> CollectorError:
    """A CollectorError located at ``file:line`` with a caret when the text is known."""
    if where is None:
        return CollectorError(message)
    diag = Diagnostic(CollectorError.code, message, where, source=source)
    return CollectorError(f"{where.file}:{where.line}: {message}", diagnostics=[diag])


def _tokens(raw: str, where: SourceLoc, text: str) -> list[tuple[str, int]]:
    """shlex tokens with ``,`` and ``|`` as separate punctuation, each with its 1-based column
    (best effort: quoted tokens are found by their unquoted text)."""
    lex = shlex.shlex(raw, posix=True, punctuation_chars=",|")
    lex.whitespace_split = True
    lex.commenters = "#"
    try:
        toks = list(lex)
    except ValueError as err:  # unbalanced quotes
        raise scenario_error(where, f"cannot split line: {err}", text) from err
    out, cursor = [], 0
    for tok in toks:
        idx = raw.find(tok, cursor)
        col = (idx if idx >= 0 else cursor) + 1
        cursor = idx + len(tok) if idx >= 0 else cursor
        out.append((tok, col))
    return out


def _number(tok: str, what: str, where: SourceLoc, text: str) -> float:
    try:
        value = float(tok)
    except ValueError:
        raise scenario_error(where, f"{what} must be a number, not {tok!r}", text) from None
    if value != value or value in (float("inf"), float("-inf")) or value < 0:
        raise scenario_error(where, f"{what} must be a finite number >= 0, not {tok!r}", text)
    return value


def _check_random(mtbf: float, mttr: float, until: float, start: float, on: str,
                  where: SourceLoc, text: str | None) -> None:
    if mtbf <= 0 or mttr <= 0:
        raise scenario_error(where, "mtbf and mttr must be > 0", text)
    if until <= start:
        raise scenario_error(where, f"until={until:g} must be after from={start:g}", text)
    if on not in ("links", "nodes"):
        raise scenario_error(where, f"on= must be 'links' or 'nodes', not {on!r}", text)


def _groups(toks: list[str], where: SourceLoc, text: str) -> tuple[tuple[str, ...], ...]:
    """``a,b,c | d,e`` -> (("a","b","c"), ("d","e")); names must be disjoint and non-empty."""
    sides: list[list[str]] = [[]]
    for tok in toks:
        if tok and set(tok) <= {",", "|"}:
            for ch in tok:
                if ch == "|":
                    sides.append([])
        else:
            sides[-1].append(tok)
    if len(sides) != 2 or not sides[0] or not sides[1]:
        raise scenario_error(where, "expected two node groups 'a,b | c,d'", text)
    both = set(sides[0]) & set(sides[1])
    if both:
        raise scenario_error(where, f"node(s) {', '.join(sorted(both))} on both sides", text)
    return tuple(sides[0]), tuple(sides[1])


def _render(words: list[str]) -> str:
    """The step as canonical text for ``detail`` (comment dropped, quoting kept minimal)."""
    out = ""
    for w in words:
        if w and set(w) <= {",", "|"}:
            out += w.replace("|", " | ")
        else:
            q = shlex.quote(w) if set(w) & set(" \t#'\",|") else w
            out += q if not out or out.endswith((",", " ")) else " " + q
    return out


_USAGE = ("expected 'at T fail|recover link A B', 'at T fail|recover node C', "
          "'at T flap link A B every P times N', 'at T partition|heal A,B | C,D', "
          "'random failures mtbf=X mttr=Y until=Z', or 'seed N'")


def _parse_line(raw: str, file: str, lineno: int, text: str) -> Step | RandomFailures | int | None:
    where = SourceLoc(file, lineno, 1)
    toks = _tokens(raw, where, text)
    if not toks:
        return None
    words = [t for t, _ in toks]
    where = SourceLoc(file, lineno, toks[0][1])
    step_text = _render(words)

    def bad(msg: str, col_index: int | None = None) -> CollectorError:
        col = toks[col_index][1] if col_index is not None and col_index < len(toks) else 1
        return scenario_error(SourceLoc(file, lineno, col), msg, text)

    if words[0] == "seed":
        if len(words) != 2 or not words[1].lstrip("-").isdigit():
            raise bad("expected 'seed N' (an integer)")
        return int(words[1])

    if words[:2] == ["random", "failures"]:
        opts: dict[str, str] = {}
        for i, w in enumerate(words[2:], 2):
            k, eq, v = w.partition("=")
            if not eq or k not in ("mtbf", "mttr", "until", "from", "on") or k in opts:
                raise bad(f"unexpected {w!r}; expected mtbf=X mttr=Y until=Z [from=T] "
                          "[on=links|nodes]", i)
            opts[k] = v
        missing = [k for k in ("mtbf", "mttr", "until") if k not in opts]
        if missing:
            raise bad(f"random failures needs {', '.join(k + '=' for k in missing)}")
        mtbf, mttr, until = (_number(opts[k], k, where, text) for k in ("mtbf", "mttr", "until"))
        start = _number(opts.get("from", "0"), "from", where, text)
        on = opts.get("on", "links")
        _check_random(mtbf, mttr, until, start, on, where, text)
        return RandomFailures(mtbf, mttr, until, start, on, step_text, where)

    if words[0] != "at" or len(words) < 3:
        raise bad(_USAGE, 0)
    time = _number(words[1], "time", SourceLoc(file, lineno, toks[1][1]), text)
    verb, rest = words[2], words[3:]
    if verb in ("fail", "recover"):
        if rest[:1] == ["link"] and len(rest) == 3:
            return Step(time, f"{verb}_link", (rest[1], rest[2]), text=step_text, where=where)
        if rest[:1] == ["node"] and len(rest) == 2:
            return Step(time, f"{verb}_node", (rest[1],), text=step_text, where=where)
        raise bad(f"expected 'at T {verb} link A B' or 'at T {verb} node C'", 2)
    if verb == "flap":
        if len(rest) != 7 or rest[0] != "link" or rest[3] != "every" or rest[5] != "times":
            raise bad("expected 'at T flap link A B every P times N'", 2)
        every = _number(rest[4], "every", where, text)
        if every <= 0:
            raise bad("flap period 'every' must be > 0", 7)
        if not rest[6].isdigit() or int(rest[6]) < 1:
            raise bad(f"flap 'times' must be a positive integer, not {rest[6]!r}", 9)
        return Step(time, "flap", (rest[1], rest[2]), every=every, times=int(rest[6]),
                    text=step_text, where=where)
    if verb in ("partition", "heal"):
        return Step(time, verb, groups=_groups(rest, where, text), text=step_text, where=where)
    raise bad(f"unknown step {verb!r}; {_USAGE}", 2)
