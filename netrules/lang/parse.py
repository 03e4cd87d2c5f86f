"""NDlog text -> AST: the lark parser for ``ndlog.lark`` and a Transformer named after its rules.

Parsing is all-or-nothing: any syntax or well-formedness error raises before a Program exists,
so nothing is ever half-loaded.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Mapping
from dataclasses import replace
from importlib import resources

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, VisitError

from netrules.errors import (
    Diagnostic,
    FactsError,
    NdlogSyntaxError,
    NetrulesError,
    ProgramError,
    SourceLoc,
)
from netrules.facts import Fact
from netrules.lang import ast
from netrules.lang.preprocess import preprocess
from netrules.lang.syntax_errors import SYNTAX_ERRORS

__all__ = ["parse_program", "parse_facts", "parse_updates", "parse_atom", "grammar_rules"]

_AGG_FUNCS = {"MIN", "MAX", "COUNT", "SUM"}

Origin = Callable[[int, int], SourceLoc]  # expanded (line, column) -> where it was written


@functools.cache
def _parser() -> Lark:
    text = resources.files("netrules.lang").joinpath("ndlog.lark").read_text(encoding="utf-8")
    return Lark(text, parser="lalr", propagate_positions=True, maybe_placeholders=True)


def grammar_rules() -> set[str]:
    """Names of the grammar's rules and aliases that reach the Transformer."""
    names: set[str] = set()
    for rule in _parser().rules:
        origin = rule.origin.name
        name = rule.alias or origin
        if not str(origin).startswith(("_", "__")) and not rule.options.expand1:
            names.add(str(name))
        elif rule.alias:
            names.add(str(rule.alias))
    return names


class _Diag(Exception):
    """Raised inside the transformer; carries a located well-formedness problem."""

    def __init__(self, message: str, line: int, column: int,
                 loc: SourceLoc | None = None) -> None:
        super().__init__(message)
        self.line, self.column = line, column
        self.loc = loc  # set when the position is already a written one (from an AST node)

    @classmethod
    def at(cls, message: str, node: object) -> _Diag:
        loc = getattr(node, "loc", None)
        if isinstance(loc, SourceLoc):
            return cls(message, loc.line, loc.column, loc)
        return cls(message, *_pos(node))

    def where(self, file: str, origin: Origin | None) -> SourceLoc:
        if self.loc is not None:
            return self.loc
        return origin(self.line, self.column) if origin else SourceLoc(file, self.line,
                                                                        self.column)


def _pos(x: object) -> tuple[int, int]:
    if isinstance(x, Token):
        return x.line or 1, x.column or 1
    meta = getattr(x, "meta", None)
    if meta is not None and not meta.empty:
        return meta.line, meta.column
    loc = getattr(x, "loc", None)
    if isinstance(loc, SourceLoc):
        return loc.line, loc.column
    return 1, 1


@v_args(meta=True)
class _ToAst(Transformer):
    """One method per grammar rule (see ndlog.lark); each returns the AST node for it."""

    def __init__(self, file: str, origin: Origin | None = None) -> None:
        super().__init__()
        self.file = file
        self.origin = origin

    def _at(self, line: int, col: int) -> SourceLoc:
        return self.origin(line, col) if self.origin else SourceLoc(self.file, line, col)

    def _loc(self, meta: object) -> SourceLoc:
        line, col = _pos(meta) if isinstance(meta, Token) else (meta.line, meta.column)
        return self._at(line, col)

    def _tok_loc(self, tok: Token) -> SourceLoc:
        return self._at(tok.line or 1, tok.column or 1)

    # statements -------------------------------------------------------------------------
    def start(self, meta, items):
        return list(items)

    def materialize(self, meta, items):
        name, lifetime, size, keys = items
        return ast.Materialize(str(name), lifetime, size, tuple(k for k, _ in keys),
                               self._loc(meta), tuple(t for _, t in keys))

    def lifetime(self, meta, items):
        (tok,) = items
        return float("inf") if tok.type == "INFINITY" else float(int(tok))

    def keys(self, meta, items):
        return tuple(k for k in items if k is not None)

    def key(self, meta, items):
        pos, typ = items
        return int(pos), (str(typ) if typ is not None else None)

    def rule(self, meta, items):
        label, delete, head, body = items
        return ast.Rule(head, tuple(body or ()), label, self._loc(meta), delete is not None)

    def label(self, meta, items):
        return str(items[0])

    def body(self, meta, items):
        return list(items)

    def query(self, meta, items):
        return ast.Query(items[0], self._loc(meta))

    # literals ---------------------------------------------------------------------------
    def negation(self, meta, items):
        return ast.Negation(items[1], self._loc(meta))

    def assignment(self, meta, items):
        var_tok, _, expr = items
        return ast.Assignment(ast.Var(str(var_tok), self._tok_loc(var_tok)), expr, self._loc(meta))

    def comparison(self, meta, items):
        left, op, right = items
        return ast.Comparison(str(op), left, right, self._loc(meta))

    def atom(self, meta, items):
        name_tok, *args = items
        args = [a for a in args if a is not None]
        locspec = None
        terms = []
        for i, (has_at, term, at_tok) in enumerate(args):
            if has_at:
                if locspec is not None:
                    raise _Diag(f"{name_tok}: more than one location specifier '@'",
                                at_tok.line, at_tok.column)
                locspec = i
            terms.append(term)
        return ast.Atom(str(name_tok), tuple(terms), locspec, self._loc(meta))

    # path patterns ----------------------------------------------------------------------
    def path_atom(self, meta, items):
        pattern, *args = items
        args = [a for a in args if a is not None]
        locspec = None
        for i, (has_at, term, at_tok) in enumerate(args):
            if isinstance(term, ast.Aggregate):
                raise _Diag.at("an aggregate cannot be an endpoint of a path pattern", term)
            if has_at:
                if i != 0:
                    raise _Diag("in a path pattern '@' can only mark the first endpoint: the "
                                "pattern's relations are located at their source node",
                                at_tok.line, at_tok.column)
                locspec = 0
        return ast.PathAtom(pattern, tuple(t for _, t, _ in args), locspec, self._loc(meta))

    def path_rel(self, meta, items):
        return ast.PathRel(str(items[0]), self._tok_loc(items[0]))

    def path_union(self, meta, items):
        left, right = items
        parts = (left.parts if isinstance(left, ast.PathUnion) else (left,)) + (right,)
        return ast.PathUnion(parts, self._loc(meta))

    def path_concat(self, meta, items):
        left, right = items
        parts = (left.parts if isinstance(left, ast.PathConcat) else (left,))
        parts += right.parts if isinstance(right, ast.PathConcat) else (right,)
        return ast.PathConcat(parts, self._loc(meta))

    def path_plus(self, meta, items):
        return ast.PathPlus(items[0], self._loc(meta))

    def path_star(self, meta, items):
        return ast.PathStar(items[0], self._loc(meta))

    def path_inverse(self, meta, items):
        return ast.PathInverse(items[0], self._loc(meta))

    def arg(self, meta, items):
        if len(items) == 1:  # aggregate
            return (False, items[0], None)
        at, term = items
        return (at is not None, term, at)

    def aggregate(self, meta, items):
        func_tok, var_tok = items
        func = str(func_tok)[2:]
        if func not in _AGG_FUNCS:
            raise _Diag(f"unknown aggregate {func_tok}; use one of "
                        + ", ".join(f"a_{f}" for f in sorted(_AGG_FUNCS)),
                        func_tok.line, func_tok.column)
        var = None if var_tok.type == "STAR" else ast.Var(str(var_tok), self._tok_loc(var_tok))
        if var is None and func != "COUNT":
            raise _Diag(f"a_{func}<*> is not defined; only a_COUNT<*> counts rows",
                        func_tok.line, func_tok.column)
        return ast.Aggregate(func, var, self._loc(meta))

    # expressions ------------------------------------------------------------------------
    def binop(self, meta, items):
        left, op, right = items
        return ast.BinOp(str(op), left, right, self._loc(meta))

    def neg(self, meta, items):
        (operand,) = items
        if isinstance(operand, ast.Const) and isinstance(operand.value, int | float):
            return ast.Const(-operand.value, self._loc(meta))
        return ast.Neg(operand, self._loc(meta))

    def var(self, meta, items):
        return ast.Var(str(items[0]), self._loc(meta))

    def call(self, meta, items):
        name_tok, *args = items
        terms = []
        for a in args:
            if a is None:
                continue
            has_at, term, at_tok = a
            if has_at:
                raise _Diag(f"'@' marks a location in an atom, not in a call to {name_tok}",
                            at_tok.line, at_tok.column)
            if isinstance(term, ast.Aggregate):
                raise _Diag.at("an aggregate cannot be a function argument", term)
            terms.append(term)
        return ast.Call(str(name_tok), tuple(terms), self._loc(meta))

    def list(self, meta, items):
        return ast.ListExpr(tuple(i for i in items if i is not None), self._loc(meta))

    def symbol(self, meta, items):
        return ast.Const(str(items[0]), self._loc(meta))

    def integer(self, meta, items):
        return ast.Const(int(items[0]), self._loc(meta))

    def floating(self, meta, items):
        return ast.Const(float(items[0]), self._loc(meta))

    def string(self, meta, items):
        import json

        return ast.Const(json.loads(str(items[0])), self._loc(meta))

    def infinity(self, meta, items):
        return ast.Const(float("inf"), self._loc(meta))


def _expected(err: UnexpectedInput) -> list[str]:
    names = getattr(err, "expected", None) or getattr(err, "allowed", None) or set()
    terms = {t.name: t for t in _parser().terminals}
    out = []
    for n in sorted(names):
        t = terms.get(n)
        if t is not None and t.pattern.type == "str":
            out.append(repr(t.pattern.value))
        else:
            out.append({"VAR": "a variable", "NAME": "a name", "INT": "an integer",
                        "FLOAT": "a number", "ESCAPED_STRING": "a string",
                        "AGGOP": "an aggregate", "CMP": "a comparison",
                        "ADDOP": "'+' or '-'", "MULOP": "'*', '/' or '%'",
                        "NOT": "'not'", "DELETE": "'delete'", "INFINITY": "'infinity'",
                        "LOCSPEC": "'@'",
                        "$END": "end of input"}.get(n, n))
    return sorted(set(out))


@functools.cache
def _catalogue_parse():
    return _parser().parse


def _syntax_error(text: str, file: str, err: UnexpectedInput, origin: Origin | None = None,
                  sources: dict[str, str] | None = None) -> NdlogSyntaxError:
    try:
        # same state, same token type beats same state only: many labels share a state
        label = err.match_examples(_catalogue_parse(), SYNTAX_ERRORS, use_accepts=True,
                                   token_type_match_fallback=True)
    except Exception:  # a catalogue problem must never hide the user's error
        label = None
    line = getattr(err, "line", None) or 1
    column = getattr(err, "column", None) or 1
    tok = getattr(err, "token", None)
    if isinstance(err, UnexpectedEOF) or line < 0 or (tok is not None and tok.type == "$END"):
        line, column = _end_position(text)
    expected = _expected(err)
    if isinstance(err, UnexpectedCharacters):
        what = f"unexpected character {text[err.pos_in_stream]!r}"
    elif isinstance(err, UnexpectedEOF):
        what = "unexpected end of input"
    else:
        tok = err.token  # type: ignore[attr-defined]
        what = "unexpected end of input" if tok.type == "$END" else f"unexpected {str(tok)!r}"
    if text[max(0, _offset(text, line, column) - 2):].startswith("/*"):
        label = label or "unterminated comment"
    msg = f"{label}: {what}" if label else what
    if expected:
        msg += "; expected " + (expected[0] if len(expected) == 1 else
                                "one of " + ", ".join(expected))
    loc = origin(line, column) if origin else SourceLoc(file, line, column)
    return NdlogSyntaxError(msg, loc, (sources or {}).get(loc.file, text), expected, label)


def _end_position(text: str) -> tuple[int, int]:
    """Line and column just after the last non-blank character: where input ran out."""
    stripped = text.rstrip()
    lines = stripped.splitlines() or [""]
    return len(lines), len(lines[-1]) + 1


def _offset(text: str, line: int, column: int) -> int:
    lines = text.splitlines(keepends=True)
    return sum(len(x) for x in lines[: line - 1]) + column - 1


def _parse_statements(text: str, file: str, origin: Origin | None = None,
                      sources: dict[str, str] | None = None) -> list:
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as err:
        raise _syntax_error(text, file, err, origin, sources) from None
    try:
        return _ToAst(file, origin).transform(tree)
    except VisitError as err:
        inner = err.orig_exc
        if isinstance(inner, _Diag):
            loc = inner.where(file, origin)
            src = (sources or {}).get(loc.file, text)
            raise NdlogSyntaxError(str(inner), loc, src, []) from None
        raise


def _resourced(err: NetrulesError, sources: dict[str, str]) -> NetrulesError:
    """``err`` with each caret drawn from the file its location names (an included file's
    line is not the including file's)."""
    err.diagnostics = [replace(d, source=sources.get(d.loc.file, d.source)) if d.loc else d
                       for d in err.diagnostics]
    return err


def parse_program(text: str, file: str = "<program>") -> ast.Program:
    """Parse and check an NDlog program; raise NdlogSyntaxError or ProgramError, never half-load.

    Ground rules with no body become facts; path patterns (``<r+>(X,Y)``) are compiled into
    plain rules (``patterns.compile_patterns``); ``check.check_program`` then normalises ``=``
    and verifies safety, arities and location specifiers.
    """

    if "#" not in text:
        from netrules.lang.builtins import BUILTINS  # (late: the oracle imports this module)

        builtins = tuple((n, b.arities, b.volatile) for n, b in BUILTINS.items())
        return _parse_plain(text, file, builtins)
    exp = preprocess(text, file)  # (never remembered: an included file may have changed)
    try:
        return _parse_program(exp.text, file, text, exp.origin, exp.sources)
    except NetrulesError as err:
        raise _resourced(err, exp.sources) from None


@functools.lru_cache(maxsize=256)
def _parse_plain(text: str, file: str, builtins: tuple) -> ast.Program:
    """A program without includes, remembered: the result is immutable and a function of the
    text, the file name and the registered builtins (``builtins``: what the checks read of
    them), and the same text is often parsed again (1,372 parses of 266 texts in two of the
    suite's random-program tests), while lark and the checks take 5 to 15 ms a program.
    Errors are raised again each time, never remembered."""
    return _parse_program(text, file, text, None, {file: text})


def _parse_program(text: str, file: str, written: str, origin: Origin | None,
                   sources: dict[str, str]) -> ast.Program:
    from netrules.lang.check import check_program
    from netrules.lang.patterns import compile_patterns

    stmts = _parse_statements(text, file, origin, sources)
    rules, facts, mats, queries, fact_locs = [], [], [], [], []
    diags: list[Diagnostic] = []
    for s in stmts:
        if isinstance(s, ast.Materialize):
            mats.append(s)
        elif isinstance(s, ast.Query):
            queries.append(s)
        elif not s.body and s.label is None and not s.delete and not ast.variables_of(s.head):
            try:
                _check_ground(s.head)
                facts.append(s.head.ground())
                fact_locs.append(s.head.loc)
            except _Diag as d:
                loc = d.where(file, origin)
                diags.append(Diagnostic("PROGRAM", str(d), loc, source=sources.get(loc.file)))
        else:
            rules.append(s)
    if diags:
        raise ProgramError(f"{len(diags)} error(s) in {file}", diagnostics=diags,
                           code=diags[0].code)
    program = ast.Program(tuple(rules), tuple(facts), tuple(mats), tuple(queries), file, written,
                          fact_locs=tuple(fact_locs))
    return check_program(compile_patterns(program))


def _check_ground(atom: ast.Atom) -> None:
    from netrules.lang.builtins import BuiltinError, evaluate

    for t in atom.args:
        if isinstance(t, ast.Aggregate):
            raise _Diag.at("an aggregate cannot appear in a fact", t)
        try:
            evaluate(t, {})
        except BuiltinError as err:
            raise _Diag.at(f"{atom.relation}: {err}", t) from None


def check_fact(fact: Fact, arity: Mapping[str, int], derived: Collection[str] = ()
               ) -> str | None:
    """Why ``fact`` cannot be fed to a program with these relations (None when it can): an
    unknown relation, a derived one, or the wrong number of arguments."""
    want = arity.get(fact.relation)
    if want is None:
        known = ", ".join(sorted(r for r in arity if r not in derived)) or "(none)"
        return f"unknown relation {fact.relation}; the program's base relations are {known}"
    if fact.relation in derived:
        return (f"{fact} asserts derived relation {fact.relation}; only base relations take "
                "facts")
    if want != len(fact.args):
        return f"{fact} has {len(fact.args)} arguments; {fact.relation} takes {want}"
    return None


def parse_facts(text: str, file: str = "<facts>", *, arity: Mapping[str, int] | None = None,
                derived: Collection[str] = ()) -> list[Fact]:
    """Ground facts, one per statement (``link(@a,b,1).``); anything else is a FactsError.
    With ``arity`` (a plan's), a fact the program cannot take is one too (``check_fact``)."""
    stmts = _parse_statements(text, file)
    out: list[Fact] = []
    for s in stmts:
        if (not isinstance(s, ast.Rule) or s.body or s.label or s.delete
                or ast.variables_of(s.head)):
            line, col = _pos(s)
            raise FactsError(f"{file}:{line}:{col}: expected a ground fact, got: {s}",
                             diagnostics=[Diagnostic("FACTS", "expected a ground fact",
                                                     SourceLoc(file, line, col), source=text)])
        try:
            _check_ground(s.head)
        except _Diag as d:
            raise FactsError(f"{file}:{d.line}:{d.column}: {d}") from None
        fact = s.head.ground()
        why = check_fact(fact, arity, derived) if arity is not None else None
        if why:
            line, col = _pos(s.head)
            raise FactsError(f"{file}:{line}:{col}: {why}", diagnostics=[
                Diagnostic("FACTS", why, SourceLoc(file, line, col), source=text)])
        out.append(fact)
    return out


def parse_atom(text: str, file: str = "<query>") -> ast.Atom:
    """One atom, as typed in a query (``reachable(@a, X)``; a trailing '.' is optional)."""
    body = text.strip()
    start = len(text) - len(text.lstrip())  # where the atom begins in what was typed
    if body.startswith("?-"):
        start += 2 + len(body[2:]) - len(body[2:].lstrip())
        body = body[2:].strip()
    wrapped = f"?- {body}" if body.endswith(".") else f"?- {body}."
    try:
        stmts = _parse_statements(wrapped, file)
    except NdlogSyntaxError as err:
        raise _as_typed(err, text, start, len(body), file) from None
    if len(stmts) != 1:
        raise NdlogSyntaxError("expected exactly one atom", SourceLoc(file, 1, 1), text, [])
    return stmts[0].atom


def _as_typed(err: NdlogSyntaxError, text: str, start: int, length: int,
              file: str) -> NdlogSyntaxError:
    """``err`` about the wrapped query, located in the text the user typed.

    parse_atom parses ``?- atom.``; a caret under the ``?-`` or the ``.`` it added would point
    at characters the user never typed, so the column is shifted back and an error at the added
    ``.`` becomes the end of input.
    """
    at = _offset(f"?- {text[start:start + length]}.", err.line, err.column) - len("?- ")
    message = err.diagnostics[0].message
    if at >= length:  # at (or past) the '.' parse_atom appended: the input ran out
        message = message.replace("unexpected '.'", "unexpected end of input", 1)
        at = length
    line, column = _position(text, start + max(at, 0))
    return NdlogSyntaxError(message, SourceLoc(file, line, column), text, err.expected,
                            err.label)


def _position(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of ``offset`` in ``text``."""
    before = text[:offset]
    return before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1


def parse_updates(text: str, file: str = "<updates>", *, arity: Mapping[str, int] | None = None,
                  derived: Collection[str] = ()) -> list[list[tuple[str, Fact]]]:
    """Batches of signed facts: lines ``+fact.`` / ``-fact.``, batches separated by ``---``.

    Blank lines and ``//`` or ``#`` comment lines are skipped; an empty batch is kept, so
    batch N of the result is batch N of the file (a file with no content has none). Errors
    name file:line:column; with ``arity``, so does a fact the program cannot take.
    """
    batches: list[list[tuple[str, Fact]]] = [[]]
    content = False
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith(("//", "#")):
            continue
        content = True
        if line.startswith("---"):
            batches.append([])
            continue
        sign = line[0]
        col = raw.index(sign) + 1
        if sign not in "+-":
            raise FactsError(f"{file}:{lineno}:{col}: an update line starts with '+' or '-', "
                             f"or is '---' between batches")
        try:
            facts = parse_facts(line[1:], file)
        except (NdlogSyntaxError, FactsError) as err:
            loc = getattr(err, "loc", None)
            c = col + (loc.column if loc else 1)
            detail = err.diagnostics[0].message if err.diagnostics else str(err)
            raise FactsError(f"{file}:{lineno}:{c}: {detail}") from None
        if len(facts) != 1:
            raise FactsError(f"{file}:{lineno}:{col}: expected exactly one fact on the line")
        why = check_fact(facts[0], arity, derived) if arity is not None else None
        if why:
            raise FactsError(f"{file}:{lineno}:{col + 1}: {why}", diagnostics=[
                Diagnostic("FACTS", why, SourceLoc(file, lineno, col + 1), source=text)])
        batches[-1].append((sign, facts[0]))
    return batches if content else []
