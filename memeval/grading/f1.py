"""Token F1 between an answer and a gold answer, normalised as LoCoMo's own metric does.

Normalisation: commas dropped, the words a/an/the/and dropped, punctuation dropped,
lowercased, whitespace split, each token Porter-stemmed (nltk's PorterStemmer, which needs
no downloaded data). F1 is over the multiset of tokens. LoCoMo's scorer splits multi-hop
gold answers at commas and averages per part; this is the plain form, one gold string.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nltk.stem import PorterStemmer

_DROPPED_WORDS = re.compile(r"\b(a|an|the|and)\b", re.IGNORECASE)
_PUNCTUATION = str.maketrans("", "", string.punctuation)


@lru_cache(maxsize=1)
def _stemmer() -> PorterStemmer:
    # imported on first use: `import nltk` pulls in scipy (~3.5 s), which a run whose
    # questions carry no `answer_f1` never needs
    from nltk.stem import PorterStemmer

    return PorterStemmer()


def tokens(text: str) -> list[str]:
    """The normalised, stemmed tokens of `text`."""
    text = _DROPPED_WORDS.sub(" ", text.replace(",", ""))
    words = text.translate(_PUNCTUATION).lower().split()
    stem = _stemmer().stem
    return [stem(w) for w in words]


def token_f1(answer: str, gold: str) -> float:
    """F1 of the answer's tokens against the gold answer's (0.0 when either is empty)."""
    predicted, expected = tokens(answer), tokens(gold)
    common = sum((Counter(predicted) & Counter(expected)).values())
    if not common:
        return 0.0
    precision, recall = common / len(predicted), common / len(expected)
    return 2 * precision * recall / (precision + recall)
