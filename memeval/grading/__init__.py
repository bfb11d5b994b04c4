"""Grading a saved run: deterministic checks, fact retention, the LLM judge, human grades."""

from memeval.grading.run import grade_run
from memeval.tables import write_tables

__all__ = ["grade_run", "write_tables"]
