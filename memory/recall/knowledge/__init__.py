"""The shop's knowledge, understood: what a question asks (``kinds.py``), which of the shop's
things it names (``linking.py``), the search by words, meaning and name (``search.py``), how
sure an answer is (``confidence.py``), the values a sentence states (``values.py``) and answers
that need two entries (``compare.py``)."""

from memory.recall.knowledge.confidence import Confidence, Signals
from memory.recall.knowledge.kinds import Comparison, Kind, Question, is_question
from memory.recall.knowledge.linking import Mention
from memory.recall.knowledge.search import Entry, Finding, Hit, KnowledgeIndex, p95

__all__ = ["Comparison", "Confidence", "Entry", "Finding", "Hit", "Kind", "KnowledgeIndex", "Mention", "Question",
           "Signals", "is_question", "p95"]
