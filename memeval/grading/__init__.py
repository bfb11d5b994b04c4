"""Grading a saved run: deterministic checks, fact retention, the LLM judge, human grades."""

from memeval.grading.run import grade_run, grade_without_model

__all__ = ["grade_run", "grade_without_model"]
