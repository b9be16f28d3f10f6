"""Bulk grading of a whole class: input layouts and parallel, cached runs (the reports and
exports it writes are ``grader/report``'s writers)."""
