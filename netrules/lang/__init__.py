"""NDlog text -> checked AST: the grammar (ndlog.lark), its parser and the well-formedness
checks."""

from netrules.lang.ast import Program
from netrules.lang.parse import parse_atom, parse_facts, parse_program, parse_updates

__all__ = ["Program", "parse_program", "parse_facts", "parse_updates", "parse_atom"]
