"""What a suite calls: the check fixture, comparisons, expected values, source rules, figures,
known mistakes confirmed by evidence, and the observer of a session (docs/architecture.md)."""
