"""The `grade` subcommands, one module per job; `grader/cli.py` assembles them."""
