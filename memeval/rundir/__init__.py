"""The run directory: the saved record of a run, its graded results, and creating one."""
