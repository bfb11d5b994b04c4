"""Text helpers for the `cascade` updater: sentences, word overlap, and the checks code can make
on a fact better than a small model can (re-fetchable data, invented numbers and names).
"""

from __future__ import annotations

import re

_SPLIT = re.compile(
    r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\betc\.)(?<!\bvs\.)(?<!\bapprox\.)(?<![A-Z][a-z]\.)"
    r"(?<=[.!?])\s+(?=\S)|\n+\s*(?:[-*•]\s+)?"
)
_WORD = re.compile(r"[a-z0-9@#$][a-z0-9._%@#/+-]*[a-z0-9%]|[a-z0-9]", re.IGNORECASE)
_NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?%?")
_NAME = re.compile(r"\b\w+(?:[-_.#/]\w+)+\b|#\d+")
_STOPWORDS = """a an the and or but if so of to in on at by for from with as is are was were be
been being it its this that these those there here we our us you your i me my he she they them
their his her do does did done have has had will would should shall can could may might must not
no yes just only also very really now then than too about into over under up out off all any each
every some more most other such own same what which who whom whose when where why how let lets
let's please ok okay thanks thank hi hello hey user ve ll re s d t m"""
_STOP = frozenset(_STOPWORDS.split())
_REFETCHABLE = re.compile(
    r"\b[0-9a-f]{12,}\b"  # span, trace and hash ids
    r"|\b[a-z]{1,6}_(?=[A-Za-z0-9]*\d)[A-Za-z0-9]{6,}\b"  # prefixed ids: ds_Q7x2LmP9aR4k
    r"|==|!=|\battributes\[|\bnow\(\)|\binterval '"  # filter expressions
    r"|\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}",  # timestamps
    re.IGNORECASE,
)
# a trailing ellipsis, or one followed by a bracketed note ("…[cut off at the token limit]")
_UNFINISHED = re.compile(r"(?:…|\.\.\.)\s*(?:\[[^\]]*\])?\s*$")
_FIRST_PERSON = re.compile(r"^\W*(?:I|I'(?:ve|ll|m|d)|I\s+\w+|My|Me)\b")
_REPORTED = re.compile(
    r"^\W*I(?:'ve)?\s+(?:checked|looked (?:at|into)|inspected|queried|traced|reviewed|"
    r"dug into|went through)\b[^:]{0,80}:\s+(?P<finding>\S.*)$",
    re.IGNORECASE | re.DOTALL,
)
_LEAD = re.compile(r"^\s*(?:[-*•]\s*)?(?:\[user\]\s*)?", re.IGNORECASE)
_DISCOURSE = re.compile(
    r"^(?:(?:and|also|oh|so|well|ok|okay|plus|btw|by the way|for the record|good news|"
    r"heads[- ]up|fyi|one more thing|one thing stands out|please|kindly|"
    r"just a reminder|as a reminder|reminder|quick reminder)\b[,:!]?\s*)+",
    re.IGNORECASE,
)
_ACK = re.compile(
    r"^\W*(?:noted|got it|understood|sure|will do|okay|ok)\b"
    r"|^\W*(?:yes|no|right|correct|exactly|done|agreed)\b\s*[,.:;!]",
    re.IGNORECASE,
)
_RECALLS = re.compile(
    r"\b(?:we|you|I)(?:'ve|'d|\s+have|\s+had)?\s+(?:already\s+)?"
    r"(?:recorded|noted|saved|stored|agreed|decided|wrote down|written down)\b"
    r"|\b(?:on record|in (?:my|your|our) memory|in the memory file|as (?:recorded|noted))\b",
    re.IGNORECASE,
)
_ONE_OFF = re.compile(
    r"\b(?:(?:just |only )?this (?:time(?!\s+(?:last|next|of|tomorrow|yesterday)\b)|once)"
    r"|just (?:this )?once|one-?off"
    r"|I'?m (?:just )?(?:testing|trying out|experimenting)|just (?:testing|experimenting))\b",
    re.IGNORECASE,
)
_WINDOW = re.compile(
    r"\b(?:today|tonight|yesterday|overnight|so far|right now|currently|as of|"
    r"this (?:week|month|morning|afternoon|quarter)|"
    r"(?:last|past|previous) (?:\d+ |few |couple of )?(?:hours?|days?|weeks?|months?))\b",
    re.IGNORECASE,
)
_GOAL_WORDS = re.compile(r"\b(?:goals?|targets?|baselines?|okrs?|launch bar)\b", re.IGNORECASE)
_EXAMPLES = re.compile(
    r"^\W*(?:here (?:are|is)|here's|for (?:example|instance)|e\.g\.|"
    r"the (?:worst|best|first|second|last|top|latest) (?:one|few|\w+ ones?)\b|"
    r"(?:two|three|four|five|a few|some) (?:recent|of (?:the|them)|examples?)\b)",
    re.IGNORECASE,
)
_LASTING = re.compile(
    r"\b(?:always|never|from now on|every time|by default|going forward|in future|"
    r"unless I say|only ever|for us|every (?:week|day|month)|each week)\b(?! mind)",
    re.IGNORECASE,
)
_PREAMBLE = re.compile(
    r"^(?:before we (?:dive in|start|begin|get started|get going)|first,? (?:some|a bit of) "
    r"(?:context|background)|(?:here(?:'s| is) )?(?:some|a bit of|a little|quick) "
    r"(?:context|background))\b",
    re.IGNORECASE,
)
_INTENT = re.compile(
    r"^(?:I|we)(?:'m| am|'re| are) (?:planning|going|about|hoping|trying|looking) to\b"
    r"|^(?:I|we) (?:want|need|'d like|would like|plan|intend)\b",
    re.IGNORECASE,
)
_ASKS_NOW = re.compile(
    r"^(?:(?:please|also|now|then|and|so|ok|okay|first|next)\b,?\s+)*(?:"
    r"make|run|re-?run|rebuild|create|build|show|pull|check|score|dig|try|compare|find|list|"
    r"look|open|fetch|get|export|delete|remove|add|update|plot|summari[sz]e|draft|write|send|"
    r"rename|sample|label|set up|tell me|search|filter|rank|evaluate|test|deploy|draw|"
    r"generate|start|cancel|schedule|go ahead|let's|can you|could you|would you|fix|change|"
    r"move|merge|review|read|explain|walk me through|help me|investigate|debug|clean up|"
    r"answer)\b"
    # ...but a noun in that place opens a statement: "Change of plan: ...", "Update: ..."
    r"(?!\s*:|\s+(?:of|is|was|are|were|has|had|will)\b)",
    re.IGNORECASE,
)


def sentences(text: str) -> list[str]:
    """The text cut into sentences (and lines); blank pieces dropped."""
    return [piece.strip() for piece in _SPLIT.split(text or "") if piece and piece.strip()]


def words(text: str) -> list[str]:
    """Lower-case content words, plural `s` dropped, so "Datasets" and "dataset" meet."""
    out: list[str] = []
    for token in _WORD.findall(text.lower()):
        token = token.strip(".")
        if token in _STOP or not token:
            continue
        if len(token) > 3 and token.endswith("s") and not token.endswith("ss"):
            token = token[:-1]
        out.append(token)
    return out


def overlap(new: str, old: str) -> tuple[int, float]:
    """(shared content words, share of `new`'s words found in `old`)."""
    a, b = set(words(new)), set(words(old))
    if not a:
        return 0, 0.0
    shared = len(a & b)
    return shared, shared / len(a)


def numbers(text: str) -> set[str]:
    """Every number in the text, thousands separators removed (0.90 and 0.9 stay distinct)."""
    return {n.replace(",", "") for n in _NUMBER.findall(text)}


def names(text: str) -> set[str]:
    """Compound names a model might invent or mangle: gpt-4.1, legal-golden-120, PR #4812."""
    return {n.lower() for n in _NAME.findall(text)}


def refetchable(text: str) -> str | None:
    """The first raw ID, filter expression or timestamp in the text (memory leaves these to
    tools), or None."""
    found = _REFETCHABLE.search(text)
    return found.group(0) if found else None


def first_person(sentence: str) -> bool:
    """True when the assistant talks about what it did or chose ("I mapped...", "I used...")."""
    return bool(_FIRST_PERSON.match(sentence))


def reported(sentence: str) -> str:
    """What the assistant found, when it says how it looked first ("I checked the feed: the
    feed lags by two days" -> "The feed lags by two days"); else the sentence unchanged. Only
    verbs of looking: "I changed X: ..." stays the assistant's own action."""
    found = _REPORTED.match(sentence)
    if not found or first_person(found.group("finding")):
        return sentence
    finding = found.group("finding")
    return finding[:1].upper() + finding[1:]


def unfinished(sentence: str) -> bool:
    """True when the sentence trails off ("some context…") or was stopped mid-way and marked
    so ("the dataset is …[stopped: it began repeating itself]"): half a sentence is no fact."""
    return bool(_UNFINISHED.search(sentence))


def acknowledges(sentence: str) -> bool:
    """True for the assistant's "Noted: ..." / "Yes, ..." restatements of what the user said."""
    return bool(_ACK.match(sentence))


def time_window(sentence: str) -> bool:
    """True when the sentence is about a time window ("today", "last 7 days", "as of"): its
    numbers are live and a tool can fetch them again."""
    return bool(_WINDOW.search(sentence))


def recalls(sentence: str) -> bool:
    """True when the sentence says what was recorded or agreed ("the checkpoint we recorded
    was…"): a claim about memory, not something a tool turned up."""
    return bool(_RECALLS.search(sentence.replace("’", "'")))


def one_off(message: str) -> bool:
    """True when the user marks the turn as an exception ("this time", "just once", "I'm
    testing a new prompt"), unless the message also words a standing rule: what it turns up
    is not the project's state."""
    text = message.replace("’", "'")
    return bool(_ONE_OFF.search(text)) and not lasting(text)


def measures_goal(sentence: str) -> bool:
    """True when the sentence sets a number against a goal, target or baseline."""
    return bool(numbers(sentence)) and bool(_GOAL_WORDS.search(sentence))


def shows_examples(sentence: str) -> bool:
    """True for sentences that show examples or records ("Here are...", "The worst one:")."""
    return bool(_EXAMPLES.match(sentence))


def lasting(sentence: str) -> bool:
    """True when the wording marks a standing rule ("always", "never", "from now on", "every
    week"). Not "remember that": pasted text addressed to an AI says it too."""
    return bool(_LASTING.search(sentence))


def asks_now(sentence: str) -> bool:
    """True when the sentence opens like a request ("Run...", "Show me...", "Can you...")."""
    return bool(_ASKS_NOW.match(strip_lead(sentence)))


def preamble(sentence: str) -> bool:
    """True for a sentence that announces what follows ("Before we dive in, some context…")."""
    return bool(_PREAMBLE.match(strip_lead(sentence)))


def states_intent(sentence: str) -> bool:
    """True for a first-person plan or want ("I'm planning to…", "I want…", "We need…")."""
    return bool(_INTENT.match(strip_lead(sentence).replace("’", "'")))


def restates(sentence: str, said: str) -> bool:
    """True when the assistant's sentence only repeats what the user said this turn: nearly
    all its words and every number of it are in the user's text."""
    if not said.strip() or not numbers(sentence) <= numbers(said):
        return False
    shared, share = overlap(sentence, said)
    return shared >= 2 and share >= 0.7


def strip_lead(sentence: str) -> str:
    """The sentence without lead-in words ("Heads-up:", "Oh, and", "For the record,")."""
    stripped = _DISCOURSE.sub("", sentence).strip()
    return stripped or sentence  # never re-capitalised: "agent-local" is a name


def word_count(text: str) -> int:
    return len(text.split())


def clean_fact(text: str, limit: int = 240) -> str:
    """One line of fact text: no bullet, no tag, no line breaks, trimmed to `limit`."""
    line = " ".join(str(text).split())
    line = _LEAD.sub("", line).strip().strip('"').strip()
    if len(line) > limit:
        line = line[:limit].rsplit(" ", 1)[0].rstrip(",;:") + "…"
    return line


def new_values(fact: str, line: str) -> set[str]:
    """Values `fact` has and `line` lacks: numbers, compound names, and capitalised words
    inside the sentence (people, places, products). An update must bring at least one."""
    mine = numbers(fact) | names(fact) | _proper(fact)
    theirs = numbers(line) | names(line) | _proper(line)
    return mine - theirs


def _proper(text: str) -> set[str]:
    tokens = re.findall(r"(?<![.!?:]\s)(?<!^)\b[A-Z][\w&-]*", text.strip())
    return {token.lower() for token in tokens if token.lower() not in _STOP}


def faithful(fact: str, source: str) -> bool:
    """True when every number and compound name in `fact` also occurs in `source`: a small
    model that rewrites a sentence must not invent or change a value."""
    source_names = names(source)
    source_lower = source.lower()
    if not numbers(fact) <= numbers(source):
        return False
    return all(name in source_names or name in source_lower for name in names(fact))


def keeps(fact: str, sentence: str) -> bool:
    """True when `fact` still has every number and compound name of `sentence`: a rewrite may
    drop words, never the values that make the fact worth keeping."""
    fact_lower = fact.lower()
    if not numbers(sentence) <= numbers(fact):
        return False
    # hyphenated words ("heads-up", "one-page") may go; names with digits or _ . # may not
    strong = [name for name in names(sentence) if re.search(r"[\d_.#]", name)]
    return all(name in fact_lower for name in strong)


_GOAL_LEAD = re.compile(
    r"^(?:(?:our|my|the|a|one)\s+(?:main\s+|big\s+)?(?:goal|target|aim|objective)\s*(?:is|:)\s*"
    r"(?:to\s+)?|(?:we|i)\s+(?:want|need|aim|plan)\s+to\s+)",
    re.IGNORECASE,
)
TITLE_WORDS = 10


def clean_title(text: str) -> str:
    """A heading's text on one line: no `#`, quotes or closing full stop."""
    title = " ".join(str(text).split()).lstrip("#").strip().strip("\"'*").strip()
    return title.rstrip(".").strip()


def goal_title(fact: str) -> str:
    """A heading made from a goal's own words when the model gives no usable one: the goal
    without its lead-in ("Our goal is to"), up to its first clause break, ten words at most."""
    text = _GOAL_LEAD.sub("", clean_title(fact))
    text = re.split(r"[;:]\s|\s[-\u2013\u2014]\s|[.!?]\s", text)[0].rstrip(" .,")
    tokens = text.split()
    title = " ".join(tokens[:TITLE_WORDS]) + ("\u2026" if len(tokens) > TITLE_WORDS else "")
    return title[:1].upper() + title[1:]


_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_WHEN = re.compile(
    r"\b\d{1,2}:\d{2}\b|\b\d{1,2} ?[ap]\.?m\b\.?|\b\d{4}-\d{2}-\d{2}"
    rf"|\b{_MONTH} \d{{1,2}}(?:st|nd|rd|th)?\b|\b\d{{1,2}}(?:st|nd|rd|th)?(?: of)? {_MONTH}(?!\w)",
    re.IGNORECASE,
)


def names_when(text: str) -> bool:
    """Whether the text names a clock time or a calendar date ("09:14", "9am", "2025-06-18",
    "August 15th", "3 Jun")."""
    return bool(_WHEN.search(text or ""))


_TARGET = re.compile(
    r"\b(?:goals?|targets?|aim|bar|okrs?|under|below|above|at (?:least|most)|(?:less|more|"
    r"fewer) than|reach|by (?:the )?end|by q[1-4]|deadline)\b|[<>\u2264\u2265]",
    re.IGNORECASE,
)
PHRASING = frozenset(
    [
        "get",
        "reach",
        "keep",
        "make",
        "bring",
        "stay",
        "before",
        "after",
        "end",
        "goal",
        "target",
        "bar",
        "least",
        "most",
        "new",
        "want",
        "need",
        "aim",
    ]
)
"""Words that phrase a goal rather than name what it is about ("get X under 8%")."""


def states_target(sentence: str) -> bool:
    """Whether the sentence words a target ("under 10%", "at least 0.90", "our goal",
    "by the end of Q3"): what makes a goal a goal rather than a rule about how to work."""
    return bool(_TARGET.search(sentence))


_RECENT = re.compile(r"\b(?:most recent|latest|newest|last|previous)\b", re.IGNORECASE)


_WHEN_ASKED = re.compile(r"\b(?:when|what time|what date)\b", re.IGNORECASE)


def asks_latest_event(message: str) -> bool:
    """Whether a question of the message asks when the latest of something happened ("When
    did the most recent rejected action happen?"): every sentence of the answer describes
    that one event, which the next event makes old news."""
    return any(
        piece.rstrip().endswith("?") and _WHEN_ASKED.search(piece) and _RECENT.search(piece)
        for piece in sentences(message)
    )


def latest_event(sentence: str) -> bool:
    """Whether the sentence says when the latest of something happened ("The most recent
    rejected action happened on June 18 at 07:05 UTC"): the next event makes it wrong."""
    return names_when(sentence) and bool(_RECENT.search(sentence))
