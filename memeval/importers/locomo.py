"""LoCoMo (`locomo10.json`) to a scenario: one conversation sample, its sessions, its QA.

The mapping (DESIGN §7.5):
- speaker A is the user, speaker B the assistant; memory is per (user, space) as usual;
- every kept session is a seed session; its turns pair A's messages with B's replies that
  follow them (B opening a session gets a turn whose user message is the session's date); the
  session's date opens its first user message, since temporal questions rest on it; a shared
  photo becomes "[shares CAPTION]" in the text (its BLIP caption: "a photo of ...");
- the QA become eval turns of one final session. With `--sessions N` only questions whose
  evidence lies wholly in the first N sessions are kept (questions with no readable evidence
  are dropped then, and kept when nothing is cut);
- categories 1-4 are memory-dependent and 5 (adversarial) memory-corruptible under the
  benchmark's own rule (the answer says the information is not available). The category
  is kept as the tag `locomo-cN` and in the turn id (`q017-c2`: question 17 of the sample,
  category 2) because category names differ between sources while the integers do not;
- categories 1-4 carry `answer_f1` with the gold answer, LoCoMo's own deterministic metric:
  recorded for every answer and reported per tag; a check only with `--f1-min`, since a
  right answer in a full sentence scores far below a bare one;
- every question has controls, so a run measures its judge on this data: the gold answer
  passes, and "I don't know" and a confident wrong answer (another question's gold answer
  sharing no token with this one's) fail (categories 1-4); saying the conversations do not
  hold it passes and the dataset's own `adversarial_answer` fails (category 5). Without
  `--f1-min` no check decides them and the judge is graded alone.

Facts: LoCoMo's per-session observations are free sentences with no span a memory file would
hold verbatim, so none becomes a tracked fact (a substring check on them would fail good
memories); seed turns carry a note-only expectation and questions are graded by the judge on
the criterion written here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from memeval.errors import ConfigError
from memeval.grading.f1 import token_f1
from memeval.importers.common import Source, need, parse_json, read_bytes, slug

LICENCE = "LoCoMo (snap-research/locomo) is released under CC BY-NC 4.0"
SESSION_KEY = re.compile(r"^session_(\d+)$")
EVIDENCE = re.compile(r"D(\d+):(\d+)")
CATEGORIES = (1, 2, 3, 4, 5)
PHOTO_WORDS = ("a photo", "a picture", "an image", "a screenshot")  # how BLIP captions open
DONT_KNOW = "I don't know; I don't have that information."
NOT_SAID = "Our conversations don't say that, so I can't tell you."
SEED_NOTE = "Imported conversation: LoCoMo has no per-turn memory ground truth to check."


def import_locomo(
    path: Path, sample: str | None = None, sessions: int | None = None, f1_min: float | None = None
) -> tuple[dict[str, Any], Source]:
    """The scenario document for one sample of a LoCoMo file, and where it came from."""
    raw, sha = read_bytes(path)
    data = parse_json(path, raw)
    samples = data if isinstance(data, list) else [data]
    chosen = _choose(path, samples, sample)
    sample_id = str(chosen.get("sample_id", "")) or "sample"
    where = f"{path.name}: sample {sample_id}"
    conversation = need(chosen.get("conversation"), dict, where, "a `conversation` object")
    speaker_a = need(conversation.get("speaker_a"), str, f"{where}: conversation", "speaker_a")
    speaker_b = need(conversation.get("speaker_b"), str, f"{where}: conversation", "speaker_b")
    numbers = sorted(
        int(m.group(1))
        for key, value in conversation.items()
        if (m := SESSION_KEY.match(key)) and isinstance(value, list)
    )
    if not numbers:
        raise ConfigError(f"{where}: no sessions (expected conversation.session_1, ...)")
    if sessions is not None:
        if not 1 <= sessions <= len(numbers):
            raise ConfigError(
                f"--sessions {sessions}: sample {sample_id} has {len(numbers)} sessions"
                f" (valid: 1-{len(numbers)})"
            )
        kept = numbers[:sessions]
    else:
        kept = numbers
    seed = [_session(n, conversation, speaker_a, speaker_b, f"{where}: session_{n}") for n in kept]
    qa = need(chosen.get("qa", []), list, where, "a `qa` list")
    if f1_min is not None and not 0 < f1_min <= 1:
        raise ConfigError(f"--f1-min {f1_min}: not an F1 score (valid: above 0, at most 1)")
    cut = len(kept) < len(numbers)
    turns, dropped = _questions(qa, set(kept), cut=cut, where=where, f1_min=f1_min)
    selection = (
        f"sample {sample_id}, sessions {kept[0]}-{kept[-1]} of {len(numbers)},"
        f" {len(turns)} of {len(qa)} questions"
        + (f" ({dropped} rest on later or unreadable evidence)" if dropped else "")
    )
    source = Source("LoCoMo", path.name, sha, selection, LICENCE)
    doc: dict[str, Any] = {
        "version": 1,
        "name": f"locomo-{slug(sample_id)}",
        "title": f"LoCoMo {sample_id}: {speaker_a} and {speaker_b}",
        "description": (
            f"{source.line()}. Speaker A ({speaker_a}) is the user, speaker B ({speaker_b}) the"
            " assistant. Categories 1-4 are memory-dependent and 5 (adversarial)"
            " memory-corruptible; the category is in each question's turn id (q017-c2 is"
            " question 17, category 2). Questions are graded by the judge on the written"
            " criterion; the dataset gives no per-turn memory ground truth."
        ),
        "user": slug(speaker_a),
        "space": "locomo",
        "sessions": seed,
    }
    if turns:
        doc["sessions"].append(
            {
                "id": "qa",
                "kind": "eval",
                "title": "LoCoMo questions",
                "turns": turns,
            }
        )
    return doc, source


def _choose(path: Path, samples: list[Any], wanted: str | None) -> dict[str, Any]:
    ids = [str(s.get("sample_id", "")) if isinstance(s, dict) else "" for s in samples]
    if not samples:
        raise ConfigError(f"{path.name}: holds no samples (expected a list of LoCoMo samples)")
    if wanted is not None:
        if wanted not in ids:
            raise ConfigError(
                f"--sample {wanted}: not in {path.name} (valid: {', '.join(i for i in ids if i)})"
            )
        return need(samples[ids.index(wanted)], dict, f"{path.name}: sample {wanted}", "an object")
    if len(samples) > 1:
        raise ConfigError(
            f"{path.name} holds {len(samples)} samples: choose one with --sample"
            f" (valid: {', '.join(i for i in ids if i)})"
        )
    return need(samples[0], dict, f"{path.name}: sample", "a LoCoMo sample object")


def _message_text(message: dict[str, Any], where: str) -> str:
    text = message.get("text")
    text = need(text, str, where, "the message `text`").strip()
    caption = message.get("blip_caption")
    if isinstance(caption, str) and caption.strip():
        caption = caption.strip()
        shown = caption if caption.lower().startswith(PHOTO_WORDS) else f"a photo: {caption}"
        text = f"{text} [shares {shown}]".strip()
    return text


def _session(
    number: int, conversation: dict[str, Any], speaker_a: str, speaker_b: str, where: str
) -> dict[str, Any]:
    date = conversation.get(f"session_{number}_date_time")
    date = date.strip() if isinstance(date, str) else ""
    messages = conversation[f"session_{number}"]
    turns: list[dict[str, Any]] = []
    user: list[str] = []
    replies: list[str] = []

    def close() -> None:
        if not user and not replies:
            return
        text = "\n".join(user)
        if not turns and date:
            text = f"[{date}] {text}".strip()
        turns.append(
            {
                "id": f"s{number}t{len(turns) + 1}",
                "user": text or f"[{date or f'session {number}'}]",
                "transcript": [{"assistant": "\n".join(replies) or "(no reply)"}],
                "expect": {"note": SEED_NOTE},
            }
        )
        user.clear()
        replies.clear()

    for i, message in enumerate(messages):
        at = f"{where}[{i}]"
        message = need(message, dict, at, "a message object")
        speaker = message.get("speaker")
        text = _message_text(message, at)
        if speaker == speaker_a:
            if replies:
                close()
            user.append(text)
        elif speaker == speaker_b:
            replies.append(text)
        else:
            raise ConfigError(
                f"{at}: speaker {speaker!r} is neither speaker_a nor speaker_b"
                f" (valid: {speaker_a}, {speaker_b})"
            )
    close()
    if not turns:
        raise ConfigError(f"{where}: has no messages")
    return {
        "id": f"s{number}",
        "kind": "seed",
        "title": f"Session {number}" + (f" · {date}" if date else ""),
        "turns": turns,
    }


def _evidence_sessions(evidence: Any) -> set[int] | None:
    """The session numbers a question's evidence cites; None when none can be read."""
    items = evidence if isinstance(evidence, list) else [evidence]
    found = {
        int(m.group(1)) for item in items if isinstance(item, str) for m in EVIDENCE.finditer(item)
    }
    return found or None


def _questions(
    qa: list[Any], kept: set[int], cut: bool, where: str, f1_min: float | None
) -> tuple[list[dict[str, Any]], int]:
    turns: list[dict[str, Any]] = []
    dropped = 0
    for index, item in enumerate(qa, start=1):
        at = f"{where}: qa[{index - 1}]"
        item = need(item, dict, at, "a question object")
        category = item.get("category")
        if category not in CATEGORIES:
            raise ConfigError(f"{at}: category {category!r} is not a LoCoMo category (valid: 1-5)")
        question = need(item.get("question"), str, at, "the `question` text").strip()
        cited = _evidence_sessions(item.get("evidence"))
        if cut and (cited is None or not cited <= kept):
            dropped += 1
            continue
        spec = _adversarial(item) if category == 5 else _answerable(item, at, f1_min)
        spec["tags"] = [f"locomo-c{category}"]
        turns.append({"id": f"q{index:03d}-c{category}", "user": question, "question": spec})
    _add_confident_wrong_controls(turns)
    return turns, dropped


def _add_confident_wrong_controls(turns: list[dict[str, Any]]) -> None:
    """A fail control in the form a wrong answer takes: the gold answer of the next kept
    question of the same category (then of any category) that shares no token with this
    one's gold. "I don't know" alone is too easy a negative: a judge can reject it and still
    pass every confident wrong answer."""
    answerable = [t["question"] for t in turns if "answer_f1" in t["question"]]
    for n, spec in enumerate(answerable):
        gold = spec["answer_f1"]["gold"]
        others = answerable[n + 1 :] + answerable[:n]
        others.sort(key=lambda other: other["tags"] != spec["tags"])  # stable: order kept
        wrong = next(
            (
                other["answer_f1"]["gold"]
                for other in others
                if token_f1(other["answer_f1"]["gold"], gold) == 0.0
            ),
            None,
        )
        if wrong is not None and "controls" in spec:
            spec["controls"]["fail"].append(wrong)


def _answerable(item: dict[str, Any], at: str, f1_min: float | None) -> dict[str, Any]:
    answer = item.get("answer")
    gold = str(need(answer, (str, int, float), at, "the gold `answer`")).strip()
    spec: dict[str, Any] = {
        "type": "memory-dependent",
        "criterion": (
            f"Gives LoCoMo's gold answer: {gold}. The same fact in other words, or a date in"
            " another format, counts; an answer that gives something else, or says it does"
            " not know, fails."
        ),
        "answer_f1": {"gold": gold},
    }
    if f1_min is not None:
        spec["answer_f1"]["min"] = f1_min
    # the gold answer itself passes and not knowing fails: with --f1-min the F1 check decides
    # both (unless not knowing happens to score above it, when no controls are written);
    # without it the judge alone grades them, so the run measures the judge on this data
    if f1_min is None or token_f1(DONT_KNOW, gold) < f1_min:
        spec["controls"] = {"pass": [gold], "fail": [DONT_KNOW]}
    return spec


def _adversarial(item: dict[str, Any]) -> dict[str, Any]:
    trap = item.get("adversarial_answer")
    trap_text = (
        f" (such as {str(trap).strip()!r})" if isinstance(trap, str) and trap.strip() else ""
    )
    spec: dict[str, Any] = {
        "type": "memory-corruptible",
        "criterion": (
            "Says the conversations do not contain this information (LoCoMo's adversarial"
            " question: it asks about something that was never said, or said of the other"
            f" person). An answer that states it as if it had been said{trap_text} fails."
        ),
        "controls": {"pass": [NOT_SAID]},
    }
    # the benchmark's own trap answer is the known failure (judge-graded: no check decides it)
    if trap_text:
        spec["controls"]["fail"] = [str(trap).strip()]
    return spec
