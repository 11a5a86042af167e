"""Checks a schema cannot make: YAML that is too big, too deep or has duplicate keys, paths
that point at the wrong kind of thing, voices espeak-ng does not have, recordings that
are no sound file, hosts that only this machine reaches. Each returns problems as (key
path, message) for the loader to place at a line; nothing here starts anything.
"""

from __future__ import annotations

import difflib
import functools
import ipaddress
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

# A settings, persona or scenario file is a few KB; 1 MiB is generous and keeps a
# mistaken or hostile file from costing a minute of parsing (60 MB took 53 s).
MAX_FILE_BYTES = 1 << 20

Problem = tuple[tuple[Any, ...], str]


class UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that rejects a key given twice in one mapping: YAML's last-wins would
    silently drop the first value, and the first is often the one the author meant."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            try:
                key = self.construct_object(key_node, deep=True)
                first = seen.setdefault(key, key_node.start_mark.line)
            except TypeError:  # an unhashable key: SafeLoader says so itself below
                continue
            if first != key_node.start_mark.line:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} (first given on line {first + 1})", key_node.start_mark)
        return super().construct_mapping(node, deep)


class FileTooLarge(ValueError):
    """A configuration file over ``MAX_FILE_BYTES``, found while reading it."""


def size_problem(path: Path) -> str | None:
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        return _too_large(f"{size} bytes")
    return None


def _too_large(size: str) -> str:
    return f"file too large: {size} (a configuration file may have at most {MAX_FILE_BYTES})"


def read_small(path: Path) -> str:
    """The file's text, reading at most ``MAX_FILE_BYTES`` (+1): a file that grows after its
    size was checked, or one whose size the system does not know, is still refused unread."""
    with path.open("rb") as f:
        data = f.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise FileTooLarge(_too_large(f"more than {MAX_FILE_BYTES} bytes"))
    return data.decode("utf-8")


# --- paths -------------------------------------------------------------------------------


def shown_path(path: Path) -> str:
    text = str(path)
    return text if len(text) <= 120 else f"{text[:100]}...({len(text)} characters)"


def unusable_path_problem(path: Path) -> str | None:
    """Why no system call can take ``path`` at all (a NUL byte, a name far too long), or None:
    checked first, so that the checks below never raise."""
    if "\0" in str(path):
        return f"{shown_path(path)!r}: a path may not contain a NUL character"
    try:
        path.stat()
    except FileNotFoundError:
        pass
    except OSError as exc:
        if exc.strerror and not isinstance(exc, (NotADirectoryError, PermissionError)):
            return f"{shown_path(path)}: {exc.strerror}"
    return None


def writable_file_problem(path: Path) -> str | None:
    """Why ``path`` cannot be a file the robot creates or appends to, or None."""
    if problem := unusable_path_problem(path):
        return problem
    if path.is_dir():
        return f"{path} is a directory; give a file path"
    for parent in path.parents:
        if parent.exists():
            return None if parent.is_dir() else f"{path} lies under {parent}, which is a file, not a directory"
    return None


def readable_file_problem(path: Path, what: str) -> str | None:
    if problem := unusable_path_problem(path):
        return f"{what} {problem}"
    if not path.exists():
        return f"{what} {path} does not exist"
    if not path.is_file():
        return f"{what} {path} is not a file"
    return None


def sound_file_problem(path: Path) -> str | None:
    """Why ``path`` is not a recording the simulator can read (soundfile: WAV, FLAC, ...)."""
    problem = readable_file_problem(path, "recording")
    if problem:
        return problem
    import soundfile  # imported here: only scenarios with recordings need it

    try:
        soundfile.info(str(path))
    except (RuntimeError, soundfile.LibsndfileError) as exc:
        return f"{path} is not a sound file (WAV expected): {exc}"
    return None


# --- hosts -------------------------------------------------------------------------------

LOOPBACK_NAMES = ("localhost", "localhost.localdomain")


def is_loopback(host: str) -> bool:
    """Whether only this machine reaches ``host`` (a loopback name or address, ``[::1]``
    included); any other name may resolve anywhere."""
    host = host.strip("[]").lower()
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# --- voices ------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def espeak_voices() -> tuple[str, ...] | None:
    """Every name espeak-ng accepts for a voice (language, file id, its last part, voice
    name), lowercase; None when espeak-ng is not installed (the TTS then says so itself)."""
    binary = shutil.which("espeak-ng")
    if binary is None:
        return None
    try:
        listing = subprocess.run([binary, "--voices"], capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    names: list[str] = []
    for line in listing.splitlines()[1:]:
        cols = line.split()
        if len(cols) < 5:
            continue
        language, name, file_id = cols[1], cols[3], cols[4]
        names += [language, file_id, file_id.rsplit("/", 1)[-1], name, name.replace("_", " ")]
        names += [part.strip("()").split()[0] for part in cols[5:] if part.startswith("(")]
    return tuple(dict.fromkeys(n.lower() for n in names))


def voice_problem(voice: str | None) -> str | None:
    """Why espeak-ng has no voice ``voice`` (with the close ones), or None."""
    if voice is None:
        return None
    known = espeak_voices()
    if known is None:
        return None
    key = voice.strip().lower()
    if key in known:
        return None
    close = difflib.get_close_matches(key, known, n=5, cutoff=0.5)
    hint = f"; close ones: {', '.join(close)}" if close else ""
    return f"espeak-ng has no voice {voice!r}{hint} (all of them: espeak-ng --voices)"


def voice_problems(fields: list[tuple[tuple[Any, ...], str | None]]) -> list[Problem]:
    return [(loc, p) for loc, voice in fields if (p := voice_problem(voice))]


# --- per file kind -----------------------------------------------------------------------


def settings_problems(settings: Any) -> list[Problem]:
    """A ``Settings``: the memory file, the turn log, the broker's CA file, the TTS voice."""
    found = []
    if settings.memory.store is None:  # a store URL is checked when the robot reaches it
        found.append((("memory", "db_path"), writable_file_problem(settings.memory.db_path)))
    if settings.logging.turn_log is not None:
        found.append((("logging", "turn_log"), writable_file_problem(settings.logging.turn_log)))
    if settings.mqtt.ca_file is not None:
        # without it the connection would fail and be retried forever, quietly
        found.append((("mqtt", "ca_file"), readable_file_problem(settings.mqtt.ca_file, "CA file")))
    return [(loc, p) for loc, p in found if p] + voice_problems([(("tts", "voice"), settings.tts.voice)])


def persona_problems(persona: Any) -> list[Problem]:
    found = profile_problems(persona)
    if persona.voice is None:  # it will speak its language's espeak-ng voice: there must be one
        if problem := voice_problem(persona.language):
            return found + [(("language",), f"{problem}; set `voice:` to one that speaks {persona.language!r}")]
        return found
    return found + voice_problems([(("voice",), persona.voice)])


def profile_problems(persona: Any) -> list[Problem]:
    """Profile slots that do not fit the rest of the persona: a choice of the vocabulary
    without one, a type that reads numbers, dates or people in a language it has no words for."""
    from config.schema import LANGUAGE_SLOT_TYPES, SLOT_LANGUAGES

    found: list[Problem] = []
    base = persona.language.split("-")[0].lower()
    for name, slot in persona.memory.profile.items():
        where = ("memory", "profile", name)
        if slot.type == "choice" and slot.vocabulary and not slot.choices and not persona.vocabulary:
            found.append((where + ("vocabulary",), "a choice of the vocabulary, but the persona has no vocabulary: "
                                                   "give the slot choices: [...] or the persona vocabulary: [...]"))
        if slot.type in LANGUAGE_SLOT_TYPES and base not in SLOT_LANGUAGES:
            found.append((where + ("type",), f"type {slot.type} reads {', '.join(SLOT_LANGUAGES)} only, not language "
                                             f"{persona.language!r}; use type: pattern"))
    return found


def scenario_problems(scenario: Any, base: Path) -> list[Problem]:
    """A ``Scenario`` whose relative paths are relative to ``base`` (the scenario's folder)."""
    found = voice_problems([(("customer_voice",), scenario.customer_voice)]
                           + [(("turns", i, "voice"), t.voice) for i, t in enumerate(scenario.turns)])
    recordings = [(("noise_wav",), scenario.noise_wav)] + [(("turns", i, "wav"), t.wav)
                                                           for i, t in enumerate(scenario.turns)]
    for loc, path, what in ((("persona",), scenario.persona, "persona file"),
                            (("settings",), scenario.settings, "settings file")):
        if path is not None and (problem := readable_file_problem(base / path, what)):
            found.append((loc, problem))
    if scenario.room is not None:
        recordings.append((("room", "noise_wav"), scenario.room.noise_wav))
    for loc, path in recordings:
        if path is not None and (problem := sound_file_problem(base / path)):
            found.append((loc, problem))
    return found

