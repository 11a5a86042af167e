"""The shop's knowledge files: what a persona's ``knowledge.files`` hold, read into entries.

A shop writes what it sells and how to get there in files next to the persona (paths are
relative to the persona file):
- **Markdown** for prose: each heading (``##``, ``###``, ...) starts an entry, its title the
  heading and its sentences the text under it; a top ``#`` heading only groups. A line
  ``Aliases: a, b, c`` under a heading gives other names a visitor may use.
- **YAML** for tables: a list of rows, or ``{say: TEMPLATE, entries: [rows]}``. Each row is a
  mapping with a ``name``, optional ``aliases`` (a list) and any other fields (price,
  duration, ...).
- **CSV** for tables: a header line, then rows; a ``name`` column, an optional ``aliases``
  column (``a|b|c``), any other columns.
A table row is said with the file's ``say`` template (YAML's own key, or the persona's
``say`` for that file): each ``{field}`` is the row's value, and a sentence of the template
whose field the row lacks is left out. Without a template each field is a sentence of its
own ("Fare: 720 yen.").

Every problem is one line naming the file and the line (``ConfigError``); an empty file is
allowed (no entries). A file over ``MAX_KNOWLEDGE_BYTES`` is refused: see docs/knowledge.md
for why that limit, and how long indexing takes below it.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Iterable, Mapping

import yaml

from config import checks

# 8 MiB: about 25,000 entries of a few sentences; indexing them takes a few seconds at load,
# and a query stays within the retrieval budget (bench/knowledge.py --entries). A larger file
# is almost certainly not a shop's hand-written knowledge (a database dump, a log).
MAX_KNOWLEDGE_BYTES = 8 << 20
SUFFIXES = {".md": "markdown", ".markdown": "markdown", ".yaml": "yaml", ".yml": "yaml", ".csv": "csv"}
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_ALIASES = re.compile(r"^\s*(?:aliases|also called|also)\s*:\s*(.+)$", re.IGNORECASE)
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_TEMPLATE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'({])")  # a template's "{notes}" is a sentence of its own
_FIELD = re.compile(r"\{([^{}]+)\}")


class KnowledgeError(Exception):
    """A knowledge file that cannot be read: ``path``, ``line`` (1-based; 0: the whole file)."""

    def __init__(self, path: Path, line: int, message: str) -> None:
        self.path, self.line, self.message = path, line, message
        super().__init__(f"{path}: {f'line {line}: ' if line else ''}{message}")


@dataclass(frozen=True)
class KnowledgeEntry:
    """One entry of a shop's knowledge: a heading's text, or a table's row."""

    title: str
    sentences: tuple[str, ...]  # what the robot may say of it, in the shop's own words
    aliases: tuple[str, ...] = ()  # other names a visitor may use
    source: str = ""  # "tours.yaml:12": where a shop finds it
    # A table row's own fields (name included, aliases not), as written: what an offer is
    # reasoned about by (docs/consult.md), said or not; empty for a Markdown entry.
    fields: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}), compare=False, hash=False)
    path: Path | None = field(default=None, compare=False, hash=False)  # the file it was read from
    lines: tuple[int, ...] = field(default=(), compare=False, hash=False)  # each sentence's line (Markdown)

    def line_of(self, sentence: int) -> str:
        """"places.md:24": where sentence ``sentence`` is written (the entry's line for a row)."""
        if sentence < len(self.lines):
            return f"{self.source.rsplit(':', 1)[0]}:{self.lines[sentence]}"
        return self.source

    @property
    def names(self) -> tuple[str, ...]:
        return (self.title, *self.aliases)

    @property
    def text(self) -> str:
        return " ".join(self.sentences)


@dataclass(frozen=True)
class KnowledgeFileSpec:
    """A file a persona names, and the ``say`` template for its rows (None: the file's own)."""

    path: Path
    say: str | None = None


def load_knowledge(files: Iterable[KnowledgeFileSpec]) -> list[KnowledgeEntry]:
    """Every entry of ``files``, in order; ``KnowledgeError`` at the first problem."""
    entries: list[KnowledgeEntry] = []
    for spec in files:
        entries += read_file(spec.path, spec.say)
    return entries


def read_file(path: Path, say: str | None = None) -> list[KnowledgeEntry]:
    kind = SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise KnowledgeError(path, 0, f"unknown kind of knowledge file {path.suffix!r} "
                                      f"(known: {', '.join(sorted(SUFFIXES))})")
    if problem := checks.readable_file_problem(path, "knowledge file"):
        raise KnowledgeError(path, 0, problem.removeprefix(f"knowledge file {path} "))
    size = path.stat().st_size
    if size > MAX_KNOWLEDGE_BYTES:
        raise KnowledgeError(path, 0, f"file too large: {size} bytes (a knowledge file may have at most "
                                      f"{MAX_KNOWLEDGE_BYTES}; split it, or keep only what visitors ask about)")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise KnowledgeError(path, 0, f"cannot read: {exc}") from None
    if kind == "markdown":
        return _markdown(path, text)
    if kind == "csv":
        return _csv(path, text, say)
    return _yaml(path, text, say)


# --- Markdown ------------------------------------------------------------------------------


def _markdown(path: Path, text: str) -> list[KnowledgeEntry]:
    """A heading with text under it is an entry; one followed at once by a deeper heading
    groups them ("# Places" over "## Kinkaku-ji")."""
    # Comments are blanked, not removed, so the line numbers stay those of the file.
    lines = _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text).splitlines()
    entries: list[KnowledgeEntry] = []
    open_: tuple[str, int, int] | None = None  # title, line, level of the heading being read
    aliases: list[str] = []
    body: list[str] = []
    body_lines: list[int] = []

    def close(next_level: int | None) -> None:
        if open_ is None:
            return
        title, line_no, level = open_
        sentences = split_sentences(" ".join(body))
        if sentences:
            entries.append(KnowledgeEntry(title, sentences, tuple(aliases), f"{path.name}:{line_no}", path=path,
                                          lines=_sentence_lines(sentences, body, body_lines)))
        elif next_level is None or next_level <= level or aliases:
            raise KnowledgeError(path, line_no, f"the heading {title!r} has no text under it")

    for number, line in enumerate(lines, start=1):
        if heading := _HEADING.match(line):
            close(len(heading.group(1)))
            open_, aliases, body, body_lines = (heading.group(2).strip(), number, len(heading.group(1))), [], [], []
        elif not line.strip():
            continue
        elif open_ is None:
            raise KnowledgeError(path, number, "text outside an entry: put a heading (## Name) above it")
        elif (match := _ALIASES.match(line)) and not body:
            aliases += [a.strip() for a in match.group(1).split(",") if a.strip()]
        else:
            body.append(line.strip().lstrip("-*").strip())
            body_lines.append(number)
    close(None)
    return entries


def _sentence_lines(sentences: tuple[str, ...], body: list[str], numbers: list[int]) -> tuple[int, ...]:
    """The line each sentence starts on (the body's lines, in order)."""
    out, at = [], 0
    for sentence in sentences:
        head = " ".join(sentence.split()[:3])
        while at < len(body) - 1 and head not in " ".join(body[at].split()):
            at += 1
        out.append(numbers[at] if numbers else 0)
    return tuple(out)


# --- tables ---------------------------------------------------------------------------------


def _yaml(path: Path, text: str, say: str | None) -> list[KnowledgeEntry]:
    try:
        data = yaml.load(text, Loader=checks.UniqueKeyLoader)
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except RecursionError:
        raise KnowledgeError(path, 0, "nested too deeply to be a knowledge file") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise KnowledgeError(path, mark.line + 1 if mark else 0, f"broken YAML: {exc.problem or exc}") from None
    except yaml.YAMLError as exc:
        raise KnowledgeError(path, 0, f"broken YAML: {exc}") from None
    if data is None:
        return []
    rows_node = root
    if isinstance(data, dict):
        unknown = set(data) - {"say", "entries"}
        if unknown:
            raise KnowledgeError(path, _key_line(root, sorted(unknown)[0]),
                                 f"unknown key {sorted(unknown)[0]!r} (a table file has say: and entries:)")
        if data.get("say") is not None and not isinstance(data["say"], str):
            raise KnowledgeError(path, _key_line(root, "say"), "say: must be a text with {field} places")
        say = say or data.get("say")
        rows_node = _value_node(root, "entries")
        data = data.get("entries") or []
    if not isinstance(data, list):
        raise KnowledgeError(path, 1, "a table file holds a list of rows (or say: and entries:)")
    nodes = rows_node.value if isinstance(rows_node, yaml.SequenceNode) else [None] * len(data)
    entries = []
    for row, node in zip(data, nodes):
        line = node.start_mark.line + 1 if node is not None else 0
        if not isinstance(row, dict):
            raise KnowledgeError(path, line, "each row must be a mapping of fields (name: ..., price: ...)")
        entries.append(_row(path, line, row, say, aliases=row.get("aliases")))
    return entries


def _csv(path: Path, text: str, say: str | None) -> list[KnowledgeEntry]:
    if not text.strip():
        return []
    reader = csv.reader(io.StringIO(text))
    try:
        header = [h.strip() for h in next(reader)]
        if "name" not in header:
            raise KnowledgeError(path, 1, f"the header needs a name column (it has: {', '.join(header)})")
        if len(set(header)) != len(header) or not all(header):
            raise KnowledgeError(path, 1, "the header has an empty or repeated column name")
        entries = []
        for values in reader:
            line = reader.line_num
            if not any(v.strip() for v in values):
                continue
            if len(values) != len(header):
                raise KnowledgeError(path, line, f"{len(values)} values for {len(header)} columns "
                                                 "(a value with a comma needs \"quotes\")")
            row = dict(zip(header, (v.strip() for v in values)))
            aliases = [a.strip() for a in row.pop("aliases", "").split("|") if a.strip()]
            entries.append(_row(path, line, row, say, aliases=aliases))
        return entries
    except csv.Error as exc:
        raise KnowledgeError(path, reader.line_num, f"broken CSV: {exc}") from None


def _row(path: Path, line: int, row: Mapping[str, Any], say: str | None, aliases: Any) -> KnowledgeEntry:
    name = row.get("name")
    if not isinstance(name, (str, int, float)) or not str(name).strip():
        raise KnowledgeError(path, line, "a row needs a name")
    if aliases is None:
        aliases = []
    if not isinstance(aliases, list) or not all(isinstance(a, (str, int, float)) for a in aliases):
        raise KnowledgeError(path, line, "aliases must be a list of names")
    fields = {str(k).strip(): _plain(path, line, k, v) for k, v in row.items() if k != "aliases"}
    sentences = _said(fields, say) if say else tuple(
        _ended(f"{k.replace('_', ' ').capitalize()}: {v}" if k != "name" else v)
        for k, v in fields.items() if v)
    return KnowledgeEntry(str(name).strip(), tuple(s for s in sentences if s), tuple(str(a) for a in aliases),
                          f"{path.name}:{line}", MappingProxyType(dict(fields)), path)


def _plain(path: Path, line: int, key: Any, value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        raise KnowledgeError(path, line, f"field {key!r} must be a plain value, not a list or mapping")
    return " ".join(str(value).split())


def _said(fields: Mapping[str, str], say: str) -> tuple[str, ...]:
    """The template's sentences with this row's values; one whose field is empty is left out."""
    out = []
    for sentence in (s.strip() for s in _TEMPLATE_END.split(" ".join(say.split())) if s.strip()):
        names = _FIELD.findall(sentence)
        if any(not fields.get(n.strip()) for n in names):
            continue
        out.append(_FIELD.sub(lambda m: fields[m.group(1).strip()], sentence))
    return tuple(split_sentences(" ".join(out)))


def _ended(sentence: str) -> str:
    return sentence if sentence[-1:] in ".!?" else sentence + "."


def split_sentences(text: str) -> tuple[str, ...]:
    text = " ".join(text.split())
    return tuple(s.strip() for s in _SENTENCE_END.split(text) if s.strip())


def _key_line(root: yaml.Node | None, key: str) -> int:
    if isinstance(root, yaml.MappingNode):
        for k, _ in root.value:
            if k.value == key:
                return k.start_mark.line + 1
    return 1


def _value_node(root: yaml.Node | None, key: str) -> yaml.Node | None:
    if isinstance(root, yaml.MappingNode):
        for k, v in root.value:
            if k.value == key:
                return v
    return None
