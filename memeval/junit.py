"""JUnit XML: one test case per question and per write expectation, so any CI shows each check.

A suite per scenario repeat; a case's failure (or error) carries the verdict's source,
reason and evidence. Text goes through xml.etree, which escapes it.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

from memeval.rundir.results import RunResults, TurnVerdicts, Verdict


def junit_tree(results: RunResults) -> ET.ElementTree:
    root = ET.Element("testsuites", name=f"memeval {results.run_id}")
    units: dict[tuple[str, int], list[TurnVerdicts]] = defaultdict(list)
    for t in results.turns:
        units[(t.scenario, t.repeat)].append(t)
    totals = {"tests": 0, "failures": 0, "errors": 0}
    for (scenario, repeat), turns in sorted(units.items()):
        suite = ET.SubElement(root, "testsuite", name=f"{scenario} r{repeat}")
        counts = {"tests": 0, "failures": 0, "errors": 0}
        for t in sorted(turns, key=lambda t: t.index):
            cases = (("write", t.write), (f"question ({t.question_type})", t.question))
            for label, verdict in cases:
                if verdict is None:
                    continue
                _case(suite, f"{scenario}.r{repeat}.{t.session}", f"{t.turn} {label}", verdict)
                counts["tests"] += 1
                counts["failures"] += verdict.verdict == "fail"
                counts["errors"] += verdict.verdict == "error"
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
    for key, value in totals.items():
        root.set(key, str(value))
    return ET.ElementTree(root)


def write_junit(results: RunResults, path: Path) -> Path:
    tree = junit_tree(results)
    ET.indent(tree)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tree.write(path, encoding="utf-8", xml_declaration=True)
    return path


def _case(suite: ET.Element, classname: str, name: str, verdict: Verdict) -> None:
    case = ET.SubElement(suite, "testcase", classname=classname, name=name)
    if verdict.verdict not in ("fail", "error"):
        if verdict.verdict == "na":
            ET.SubElement(case, "skipped", message="nothing to grade")
        return
    tag = "failure" if verdict.verdict == "fail" else "error"
    detail = ET.SubElement(case, tag, message=f"[{verdict.source}] {verdict.reason}", type=tag)
    detail.text = "\n".join(verdict.evidence) or verdict.reason
