"""Checked program -> executable plan: stratification, localization and delta rules."""

from netrules.plan.delta import DeltaRule, delta_rules
from netrules.plan.plan import Plan, plan_program
from netrules.plan.stratify import Stratum, stratify

__all__ = ["Plan", "plan_program", "Stratum", "stratify", "DeltaRule", "delta_rules"]
