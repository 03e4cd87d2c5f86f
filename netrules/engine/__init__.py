"""Stage 3: plan + update batches -> maintained views. Only engine modules import pyspark."""
