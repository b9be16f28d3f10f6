"""The public harness: the code that runs beside learner files in the worker."""
