"""Converting between the saved run's turn records and the pipeline's Turn."""

from __future__ import annotations

from memeval.log import TurnRecord
from reference_memory.turn import Turn


def turn_from_record(record: TurnRecord) -> Turn:
    return Turn(messages=list(record.messages), completed=record.agent_error is None)
