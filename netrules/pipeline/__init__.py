"""The live pipeline: event log -> engine -> alerts -> store, batch by batch, exactly once.

``stream`` drives it with Spark Structured Streaming, ``once`` reads the log once without
Spark; both hand each batch to :class:`BatchProcessor` (``batch``), which rebuilds its engine
from the store on restart (``recover``). ``sources`` turns simulations and captures into
event-log segments. Reading the store is not the pipeline's job: see ``netrules.store.queries``.
"""

from netrules.pipeline.batch import BatchProcessor, alert_config_for, engine_factory
from netrules.pipeline.run import RunOptions, RunSummary, check_program, run_pipeline

__all__ = ["BatchProcessor", "RunOptions", "RunSummary", "alert_config_for", "check_program",
           "engine_factory", "run_pipeline"]
