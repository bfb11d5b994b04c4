"""JUnit XML: one test case per question and per write expectation, so any CI shows each check.

A suite per scenario repeat; a case's failure (or error) carries the verdict's source,
reason and evidence. Given a gate report, a failing case also says how the check did in the
baseline ("passed 5/5 in the baseline: newly failing", or "flaky in the baseline"), and a
`memeval gate` suite holds one case per gated metric, failing exactly when the gate does,
with what differs from the baseline's run as its output. Text goes through xml.etree,
which escapes it.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

from memeval.gate import GateReport
from memeval.gate_view import difference_lines, status_text
from memeval.rundir.results import RunResults, TurnVerdicts, Verdict


def junit_tree(results: RunResults, gate: GateReport | None = None) -> ET.ElementTree:
    root = ET.Element("testsuites", name=f"memeval {results.run_id}")
    units: dict[tuple[str, str, int], list[TurnVerdicts]] = defaultdict(list)
    for t in results.turns:
        # a run of several memory systems names each system's suite "scenario[system]"
        name = t.scenario if t.system is None else f"{t.scenario}[{t.system}]"
        units[(name, t.scenario, t.repeat)].append(t)
    totals = {"tests": 0, "failures": 0, "errors": 0}
    for (name, _, repeat), turns in sorted(units.items()):
        suite = ET.SubElement(root, "testsuite", name=f"{name} r{repeat}")
        counts = {"tests": 0, "failures": 0, "errors": 0}
        for t in sorted(turns, key=lambda t: t.index):
            for kind, label, verdict in (
                ("write", "write", t.write),
                ("question", f"question ({t.question_type})", t.question),
            ):
                if verdict is None:
                    continue
                context = _baseline_context(gate, (t.scenario, t.system, t.turn, kind))
                _case(suite, f"{name}.r{repeat}.{t.session}", f"{t.turn} {label}", verdict, context)
                counts["tests"] += 1
                counts["failures"] += verdict.verdict == "fail"
                counts["errors"] += verdict.verdict == "error"
        _count(suite, counts, totals)
    if gate is not None:
        _gate_suite(root, gate, totals)
    for key, value in totals.items():
        root.set(key, str(value))
    return ET.ElementTree(root)


def write_junit(results: RunResults, path: Path, gate: GateReport | None = None) -> Path:
    tree = junit_tree(results, gate)
    ET.indent(tree)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tree.write(path, encoding="utf-8", xml_declaration=True)
    return path


def _case(
    suite: ET.Element, classname: str, name: str, verdict: Verdict, context: str = ""
) -> None:
    case = ET.SubElement(suite, "testcase", classname=classname, name=name)
    if verdict.verdict not in ("fail", "error"):
        if verdict.verdict == "na":
            ET.SubElement(case, "skipped", message="nothing to grade")
        return
    tag = "failure" if verdict.verdict == "fail" else "error"
    message = f"[{verdict.source}] {verdict.reason}" + (f" ({context})" if context else "")
    detail = ET.SubElement(case, tag, message=message, type=tag)
    detail.text = "\n".join(verdict.evidence) or verdict.reason


def _baseline_context(gate: GateReport | None, key: tuple[str, str | None, str, str]) -> str:
    pair = gate.pairs.get(key) if gate is not None else None
    if pair is None:
        return ""
    history = pair.base.history()
    if pair.base.flaky:
        return f"flaky in the baseline: {history}"
    if pair.broken:
        return f"baseline: {history}, newly failing"
    return f"baseline: {history}"


def _gate_suite(root: ET.Element, gate: GateReport, totals: dict[str, int]) -> None:
    suite = ET.SubElement(root, "testsuite", name="memeval gate")
    counts = {"tests": 0, "failures": 0, "errors": 0}
    for d in gate.deltas:
        if d.status == "info":
            continue
        case = ET.SubElement(
            suite, "testcase", classname="memeval.gate", name=f"{d.scenario} {d.metric}"
        )
        counts["tests"] += 1
        text = f"{d.baseline} → {d.current} ({d.change})"
        if d.p_value is not None:
            text += f", p = {d.p_value:.3f} ({d.test} test)"
        if d.status == "regression":
            counts["failures"] += 1
            failure = ET.SubElement(case, "failure", message=text, type="regression")
            failure.text = status_text(d)
        elif d.status in ("missing", "new"):
            ET.SubElement(case, "skipped", message=f"{d.status}: {d.note or d.scenario}")
    out = ET.SubElement(suite, "system-out")
    out.text = "\n".join(
        [f"baseline: {gate.baseline}", *difference_lines(gate.differences), *gate.notes]
    )
    _count(suite, counts, totals)


def _count(suite: ET.Element, counts: dict[str, int], totals: dict[str, int]) -> None:
    for key, value in counts.items():
        suite.set(key, str(value))
        totals[key] += value
