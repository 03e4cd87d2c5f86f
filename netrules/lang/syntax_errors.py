"""Catalogue of known-bad NDlog snippets, each with the message a user should see.

lark's ``match_examples`` re-parses these and matches the failing parser state, so adding a
message is adding a line here; tests loop over the catalogue.
"""

from __future__ import annotations

__all__ = ["SYNTAX_ERRORS"]

SYNTAX_ERRORS: list[tuple[str, list[str]]] = [
    ("missing '.' at the end of the rule", [
        "p(@X) :- q(@X)\n",
        "p(@X) :- q(@X), r(@X)\n",
        "p(@a)\n",
        "p(@X) :- q(@X) r(@X).",
        "p(@X) :- q(@X)\nr(@X) :- s(@X).",
    ]),
    ("unclosed parenthesis", [
        "p(X,Y) :- <(r . s>(X,Y).",
        "p(@X :- q(@X).",
        "p(@X) :- q(@X.",
        "p(@X) :- q(@X, Y.",
        "p(@X,Y) :- q(@X), Y := (1 + 2.",
    ]),
    ("missing ':-' between the head and the body", [
        "p(@X) q(@X).",
        "p(@X) - q(@X).",
    ]),
    ("a rule body cannot be empty", [
        "p(@X) :- .",
        "p(@X) :- ",
    ]),
    ("a relation name must start with a lower-case letter", [
        "P(@X) :- q(@X).",
        "p(@X) :- Q(@X).",
        "Link(@a,b).",
    ]),
    ("'@' must stand right before an argument of an atom", [
        "p(@X) :- q(X@).",
        "@p(X) :- q(@X).",
        "p(@X) :- q(@ ).",
    ]),
    ("missing comma between arguments", [
        "p(@X Y) :- q(@X).",
        "p(@X) :- q(@X Y).",
        "p(@a b).",
    ]),
    ("missing comma between body literals", [
        "p(@X) :- q(@X) , , r(@X).",
        "p(@X) :- q(@X),.",
    ]),
    ("an aggregate is written a_FUNC<Var>, e.g. a_MIN<C>", [
        "p(@X, a_MIN C) :- q(@X, C).",
        "p(@X, a_MIN(C)) :- q(@X, C).",
        "p(@X, a_MIN<c>) :- q(@X, C).",
        "p(@X, a_MIN<C) :- q(@X, C).",
    ]),
    ("materialize takes (name, lifetime, size, keys(...))", [
        "materialize(link, infinity, infinity).",
        "materialize(link).",
        "materialize(Link, infinity, infinity, keys(1)).",
        "materialize(link, infinity, infinity, keys(a)).",
        "materialize(link, infinity, infinity, keys(1,2))",
    ]),
    ("an assignment is written Var := expression", [
        "p(@X,Y) :- q(@X), Y := .",
        "p(@X,Y) :- q(@X), := Y.",
        "p(@X,Y) :- q(@X), Y :=",
    ]),
    ("a comparison needs an expression on both sides", [
        "p(@X) :- q(@X,Y), Y < .",
        "p(@X) :- q(@X,Y), Y == ,",
        "p(@X) :- q(@X,Y), > Y.",
    ]),
    ("a query is written ?- relation(args).", [
        "?- .",
        "?- reachable(@a,X)",
        "?- X.",
    ]),
    ("unclosed list", [
        "p(@a, [b, c).",
        "p(@X,L) :- q(@X), L := [X, .",
    ]),
    ("'not' must be followed by an atom", [
        "p(@X) :- q(@X), not X == 1.",
        "p(@X) :- q(@X), not .",
    ]),
    ("unterminated comment", [
        "/* p(@X) :- q(@X).",
    ]),
    # path patterns (docs/patterns.md): <pattern>(X, Y) in rule bodies only
    ("a path pattern is closed with '>' before its endpoints, e.g. <r+>(X, Y)", [
        "p(X,Y) :- <r+(X,Y).",
        "p(X,Y) :- <r . s(X,Y).",
        "p(X,Y) :- <r(X,Y).",
        "p(X,Y) :- <(r | s)*(X,Y).",
    ]),
    ("inside a path pattern, union is written r | s and concatenation r . s "
     "(a '+' right after a name is closure)", [
        "p(X,Y) :- <r + s>(X,Y).",
        "p(X,Y) :- <r s>(X,Y).",
        "p(X,Y) :- <r- s>(X,Y).",
        "p(X,Y) :- <r* s>(X,Y).",
        "p(X,Y) :- <(r | s) t>(X,Y).",
    ]),
    ("a path pattern is built from relation names (lower-case) with postfix r+, r*, r- "
     "and infix r . s, r | s", [
        "p(X,Y) :- <+r>(X,Y).",
        "p(X,Y) :- <-r>(X,Y).",
        "p(X,Y) :- <*r>(X,Y).",
        "p(X,Y) :- <>(X,Y).",
        "p(X,Y) :- <R+>(X,Y).",
        "p(X,Y) :- <r | >(X,Y).",
        "p(X,Y) :- <r . . s>(X,Y).",
        "p(X,Y) :- <r | +s>(X,Y).",
        "p(X,Y) :- <(+r)>(X,Y).",
    ]),
    ("a path pattern is followed by its two endpoints in parentheses, e.g. <r+>(X, Y)", [
        "p(X,Y) :- <r+>.",
        "p(X,Y) :- <r+> X, Y.",
        "p(X,Y) :- <r+>, q(X,Y).",
    ]),
    ("a path pattern can only appear in a rule body", [
        "<r+>(X,Y) :- q(X,Y).",
        "<r+>(a,b).",
        "?- <r+>(a,X).",
        "p(X,Y) :- q(X,Y), X := <r+>(X,Y).",
        "p(X,Y) :- q(X,Y), X == <r+>(X,Y).",
    ]),
]
