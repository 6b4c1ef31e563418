"""Layer engines: the writers, the verifiers, Spark, and the worker process they run in."""
