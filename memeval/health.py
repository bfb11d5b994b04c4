"""Whether the memory pipeline itself worked in a run: an account from the saved turns.

A run whose updates failed on most turns (an unreachable endpoint, a wrong model name)
scores like a bad memory design; this account tells the two apart. Per scenario it counts
memory updates that failed (status `failed`, or `skipped-safety-unavailable`: the safety
gate could not run, so nothing was written), were rejected after retries or dropped over the
cap, ops the safety gate blocked, and per role the model calls that errored with their
commonest error text. A turn the agent did not complete (`skipped-incomplete-turn`) had no
update to make and is not counted as one.

A run is *unhealthy* when more than half of its memory updates failed, or when more than
half of some role's calls errored; `memeval run` then warns on stderr and exits 4.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from pydantic import BaseModel

from memeval.rundir.record import TurnRecord
from memeval.rundir.saved import SavedRun
from reference_memory.report import Status

FAILED = (Status.FAILED.value, Status.SKIPPED_SAFETY.value)
REJECTED = Status.REJECTED.value
DROPPED = Status.DROPPED.value
NOT_AN_UPDATE = Status.NOT_COMPLETED.value
ERROR_CHARS = 160  # the commonest error text is cut to this many characters when shown
# what to do when a role's calls mostly failed (no `memeval models check` command exists)
FIX = (
    "check the model endpoint (OPENAI_BASE_URL) and the model name given with --model or "
    "--model-ROLE, then run again"
)


@dataclass
class RoleCalls:
    """One role's model calls in a scenario: how many errored of how many were made."""

    role: str
    made: int = 0
    errored: int = 0
    errors: Counter[str] = field(default_factory=Counter)

    @property
    def commonest_error(self) -> str:
        """The most frequent error text ("" when no call errored)."""
        found = self.errors.most_common(1)
        return found[0][0] if found else ""

    @property
    def mostly_failed(self) -> bool:
        return self.made > 0 and 2 * self.errored > self.made

    def add(self, other: RoleCalls) -> None:
        self.made += other.made
        self.errored += other.errored
        self.errors.update(other.errors)


@dataclass
class ScenarioHealth:
    """The pipeline's account for one scenario, pooled over its repeats."""

    scenario: str
    updates: int = 0  # turns that had a memory update to make
    failed: int = 0
    rejected: int = 0
    dropped: int = 0
    blocked_ops: int = 0  # ops the safety gate blocked
    roles: dict[str, RoleCalls] = field(default_factory=dict)

    @property
    def call_errors(self) -> int:
        return sum(r.errored for r in self.roles.values())

    @property
    def calls(self) -> int:
        return sum(r.made for r in self.roles.values())

    @property
    def mostly_failed(self) -> bool:
        return self.updates > 0 and 2 * self.failed > self.updates

    def add_turn(self, record: TurnRecord) -> None:
        status = record.update.status
        if status != NOT_AN_UPDATE:
            self.updates += 1
        self.failed += status in FAILED
        self.rejected += status == REJECTED
        self.dropped += status == DROPPED
        self.blocked_ops += len(record.update.blocked)
        for call in record.model_calls():
            role = self.roles.setdefault(call.role, RoleCalls(call.role))
            role.made += 1
            if call.error:
                role.errored += 1
                role.errors[call.error.strip() or "(empty error)"] += 1

    def figures(self) -> list[str]:
        """The figures worth showing, each as "memory updates failed 7/7"; empty when the
        pipeline reported nothing wrong."""
        shown = []
        if self.failed:
            shown.append(f"memory updates failed {self.failed}/{self.updates}")
        if self.rejected:
            shown.append(f"rejected {self.rejected}")
        if self.blocked_ops:
            shown.append(f"blocked ops {self.blocked_ops}")
        for r in self.roles.values():
            if r.errored:
                shown.append(f"{r.role} call errors {r.errored}/{r.made}")
        return shown


@dataclass
class RunHealth:
    """The account per scenario, in the order the run's turns first name them."""

    scenarios: dict[str, ScenarioHealth] = field(default_factory=dict)

    def of(self, scenario: str) -> ScenarioHealth | None:
        return self.scenarios.get(scenario)

    @property
    def updates(self) -> int:
        return sum(s.updates for s in self.scenarios.values())

    @property
    def failed(self) -> int:
        return sum(s.failed for s in self.scenarios.values())

    def roles(self) -> dict[str, RoleCalls]:
        """Every role's calls over the whole run."""
        pooled: dict[str, RoleCalls] = {}
        for s in self.scenarios.values():
            for r in s.roles.values():
                pooled.setdefault(r.role, RoleCalls(r.role)).add(r)
        return pooled

    @property
    def failing_roles(self) -> list[RoleCalls]:
        """Roles more than half of whose calls errored."""
        return [r for r in self.roles().values() if r.mostly_failed]

    @property
    def updates_mostly_failed(self) -> bool:
        return self.updates > 0 and 2 * self.failed > self.updates

    @property
    def unhealthy(self) -> bool:
        return self.updates_mostly_failed or bool(self.failing_roles)

    def warning_lines(self) -> list[str]:
        """The warning block for stderr (empty when the run is healthy)."""
        if not self.unhealthy:
            return []
        lines = [
            "warning: the memory pipeline failed on most of this run; its scores measure "
            "the failures, not the memory design"
        ]
        if self.updates_mostly_failed:
            lines.append(f"  memory updates failed {self.failed}/{self.updates}")
        for r in self.failing_roles:
            lines.append(
                f"  {r.role}: {r.errored}/{r.made} calls errored; commonest error: "
                f"{shorten(r.commonest_error)}"
            )
        lines.append(f"  fix: {FIX}")
        return lines


def run_health(run: SavedRun) -> RunHealth:
    """The health account of a saved run (a resumed run's later record of a turn wins)."""
    health = RunHealth()
    for unit in run.planned_units():
        for record in unit:
            scenario = health.scenarios.setdefault(record.scenario, ScenarioHealth(record.scenario))
            scenario.add_turn(record)
    return health


def shorten(text: str, limit: int = ERROR_CHARS) -> str:
    """One line of at most `limit` characters."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


class HealthCounts(BaseModel):
    """What a baseline keeps of a scenario's health, for the gate to compare with."""

    scenario: str
    updates: int = 0
    failed_updates: int = 0
    calls: int = 0
    call_errors: int = 0


def health_counts(health: RunHealth) -> list[HealthCounts]:
    return [
        HealthCounts(
            scenario=s.scenario,
            updates=s.updates,
            failed_updates=s.failed,
            calls=s.calls,
            call_errors=s.call_errors,
        )
        for s in health.scenarios.values()
    ]
