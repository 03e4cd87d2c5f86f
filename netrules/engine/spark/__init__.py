"""Spark backends: the partitioned from-scratch evaluator and the Spark-mirrored engine."""
