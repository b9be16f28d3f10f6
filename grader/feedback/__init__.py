"""What the learner is told: the hint chosen for a failure (its texts in hints.toml), the
measurements it reports, and what each feedback level shows of a hidden test."""
