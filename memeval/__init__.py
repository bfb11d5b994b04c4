"""memeval: an evaluation harness and regression suite for agent long-term memory."""

__version__ = "0.1.0"
