"""The visitor profile's slot types: what a value is and how it is said back (``spec.py``),
read from one utterance prepared once for every slot (``said.py``), in the persona's
language (``language.py``)."""

from memory.recall.slots.language import LANGUAGES, Language, language_of
from memory.recall.slots.said import Found, Said
from memory.recall.slots.spec import (LANGUAGE_TYPES, SLOT_TYPES, SlotReader, SlotSpec, choices_of, language_for,
                                      reader_for, terms_of)

__all__ = ["LANGUAGES", "LANGUAGE_TYPES", "SLOT_TYPES", "Found", "Language", "Said", "SlotReader", "SlotSpec",
           "choices_of", "language_for", "language_of", "reader_for", "terms_of"]
