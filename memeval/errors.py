"""Errors the CLI turns into one line on stderr and exit code 2."""

from __future__ import annotations


class MemevalError(Exception):
    """Bad input: a scenario, an option, a missing key. The message is one line for the user."""


class ScenarioError(MemevalError):
    """A scenario file is invalid; the message names the file, line and key."""


class ConfigError(MemevalError):
    """An option or environment setting is invalid or missing."""


class RunDirError(MemevalError):
    """A run directory is missing, incomplete or from an incompatible schema version."""
