"""Authoring an exercise: ``check`` (every rule of the pack in one run, configlet-lint style)
and ``scaffold`` (the files of a new exercise). Reads the pack's files as text and AST; only
``--grade`` runs the engine."""
