"""Bulk grading of a whole class: input layouts, parallel runs, caches, class reports, exports."""
