"""netrules: NDlog network views, maintained incrementally on Apache Spark."""

from netrules.errors import NetrulesError
from netrules.facts import Fact
from netrules.lang import parse_facts, parse_program, parse_updates

__all__ = ["Fact", "NetrulesError", "parse_program", "parse_facts", "parse_updates"]
__version__ = "0.1.0"
