"""Prompt templates as text files, one per purpose, and a tiny loader.

Each ``<name>.txt`` starts with a header of ``#`` lines saying where the prompt comes
from; the loader strips that header, so the LLM never sees it. Placeholders use
``str.format`` names (``{summary}``); a literal brace is written ``{{``. A chat template splits into messages
at lines ``[system]`` and ``[user]`` (``load_chat_prompt``). A word list has one entry a
line (``load_word_list``).
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources


@lru_cache(maxsize=None)
def load_prompt(name: str) -> str:
    """The template ``prompts/<name>.txt`` without its leading ``#`` comment header."""
    text = resources.files(__name__).joinpath(f"{name}.txt").read_text(encoding="utf-8")
    lines = text.splitlines()
    while lines and (lines[0].startswith("#") or not lines[0].strip()):
        lines.pop(0)  # the source header (and blank lines after it) is for people
    return "\n".join(lines).strip() + "\n"


def load_chat_prompt(name: str) -> list[tuple[str, str]]:
    """The template as (role, text) parts, split at lines ``[system]`` / ``[user]``."""
    return chat_parts(load_prompt(name))


def chat_parts(template: str) -> list[tuple[str, str]]:
    """A chat template's text (a file's, or a persona's own) as (role, text) parts."""
    parts: list[tuple[str, list[str]]] = []
    for line in template.splitlines():
        if line.strip() in ("[system]", "[user]", "[assistant]"):
            parts.append((line.strip()[1:-1], []))
        elif parts:
            parts[-1][1].append(line)
        else:
            parts.append(("user", [line]))  # no section line: one user message
    return [(role, "\n".join(lines).strip()) for role, lines in parts]


def load_word_list(name: str) -> tuple[str, ...]:
    """The list ``prompts/<name>.txt``: one entry a line, blank lines left out."""
    return tuple(line.strip() for line in load_prompt(name).splitlines() if line.strip())
