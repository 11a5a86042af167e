"""The paused-speech sets that judge an end-of-turn policy, built from real recordings.

Nothing here is stored in git: the audio is read from ../shared (or $SHARED_DIR) and cut in
code, and Whisper's word timestamps are cached under the temp directory.

- (a) conversation: recordings with speaker labels (``dialogue/``: RTTM, segments, a tagged word list).
  Whisper's words are given the speaker whose labelled stretch holds them. A gap between two
  words of the same speaker is a *pause* (the turn must not end there); a gap before another
  speaker's word is a *finished* turn (the wait is measured). Each case is cut out of the
  recording: the speaker's words up to the gap, the gap's own audio, then (a pause) the
  speaker's words after it; and again with the gap made 400, 600, 900 and 1,200 ms long.
- (b) read speech (``speech/``, clips under 20 s): cut after a word that cannot end a sentence
  ("the", "to", "and", "about", ...), with 400, 600, 900 and 1,200 ms from the end of that word
  to the start of the next (cut near Whisper's word boundary, kept only where Whisper hears the
  part before the cut end on that word); the same clips ended at a sentence end (a word with a
  full stop, or the clip's last word) are finished turns.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from speech.audio import read_wav_16k_mono, silence
from speech.types import SAMPLE_RATE

REPO = Path(__file__).resolve().parents[1]
PAUSES_MS = (400, 600, 900, 1200)
# Words after which an English sentence cannot end: articles, prepositions, conjunctions,
# possessives, auxiliaries. Cutting here is a pause in mid-clause, never a finished turn.
OPEN_WORDS = frozenset("""a an the to and or but of my our your their its is are was were about for
    in with at from by into than as if because very i we they he she i'm we're""".split())
ABBREVIATIONS = frozenset("mr. mrs. ms. dr. st. mt.".split())  # a full stop that ends no sentence
MIN_GAP_S = 0.15  # a gap between words shorter than this is not a pause webrtcvad could hear
CONTEXT_S = 0.2  # audio kept before the first word and after the last (the breath, the fade)


@dataclass(frozen=True)
class Word:
    text: str
    start: float
    end: float
    speaker: str = ""

    @property
    def bare(self) -> str:
        return re.sub(r"[^a-z']", "", self.text.lower())

    @property
    def ends_sentence(self) -> bool:
        text = self.text.strip().lower()
        return text.endswith((".", "?", "!")) and text not in ABBREVIATIONS


@dataclass(frozen=True)
class Case:
    """One paused or finished turn: ``pcm`` and where its pause is."""

    part: str  # "a" or "b"
    kind: str  # "pause" (the turn must not end) or "finished" (it must, soon)
    source: str  # clip name and the words on either side
    pcm: bytes
    pause_ms: int  # the pause's length (a finished turn: the gap after it, or 0)
    before: str  # the words up to the pause
    at_s: float = 0.0  # where the pause begins in ``pcm`` (the end of the word before it)
    real: bool = True  # the pause is the recording's own gap (False: silence put in)
    after: str = ""  # the words after the pause (set b's pauses: to the clip's end)


def shared_audio() -> Path:
    return Path(os.environ.get("SHARED_DIR") or REPO.parent / "shared") / "data" / "audio"


def _cache_dir() -> Path:
    path = Path(tempfile.gettempdir()) / "robot-bench-words"
    path.mkdir(exist_ok=True)
    return path


_model = None


def _load() -> None:
    global _model
    if _model is None:
        from faster_whisper import WhisperModel

        import models

        _model = WhisperModel(str(models.resolve_model_path("embedded:tiny.en", "stt")), device="cpu",
                              compute_type="int8", cpu_threads=1)


def words_of(path: Path) -> list[Word]:
    """Whisper's words with their times (the bundled tiny.en), cached by the file's content."""
    digest = hashlib.sha1(path.read_bytes()).hexdigest()[:16]
    cached = _cache_dir() / f"{path.stem}-{digest}.json"
    if cached.is_file():
        return [Word(**w) for w in json.loads(cached.read_text())]
    import numpy as np

    _load()
    samples = np.frombuffer(read_wav_16k_mono(path), dtype=np.int16).astype(np.float32) / 32768
    segments, _ = _model.transcribe(samples, language="en", beam_size=1, word_timestamps=True,
                                    vad_filter=False, condition_on_previous_text=False)
    words = [Word(w.word.strip(), round(w.start, 3), round(w.end, 3)) for s in segments for w in s.words or []]
    cached.write_text(json.dumps([vars(w) for w in words]))
    return words


def last_word_heard(pcm: bytes) -> str:
    """What Whisper hears as the last word of ``pcm`` (cached): a cut is kept only where it
    falls after the word it was meant to."""
    digest = hashlib.sha1(pcm).hexdigest()[:20]
    cached = _cache_dir() / f"head-{digest}.txt"
    if not cached.is_file():
        import numpy as np

        _load()
        samples = np.frombuffer(pcm, dtype=np.int16).astype(np.float32) / 32768
        segments, _ = _model.transcribe(samples, language="en", beam_size=1, vad_filter=False,
                                        condition_on_previous_text=False)
        cached.write_text(" ".join(s.text for s in segments))
    words = re.findall(r"[a-z']+", cached.read_text().lower())
    return words[-1] if words else ""


def _cut(pcm: bytes, start: float, end: float) -> bytes:
    a, b = max(0, int(start * SAMPLE_RATE)), min(len(pcm) // 2, int(end * SAMPLE_RATE))
    return pcm[2 * a: 2 * b]


def _text(words: list[Word]) -> str:
    return " ".join(w.text for w in words)


# --- (a) conversation -----------------------------------------------------------------------

def speaker_turns(wav: Path) -> list[tuple[float, float, str]]:
    """The labelled stretches (start, end, speaker) beside a dialogue recording."""
    stem = wav.name.removesuffix("_16k.wav")
    folder = wav.parent
    if (rttm := folder / f"{stem}.rttm").is_file():
        rows = [line.split() for line in rttm.read_text().splitlines() if line.startswith("SPEAKER")]
        return [(float(r[3]), float(r[3]) + float(r[4]), r[7]) for r in rows]
    if (segs := folder / f"{stem}.segments.json").is_file():
        data = json.loads(segs.read_text())["tests"]["diarization_tests"][0]["segments"]
        return [(s["start_sec"], s["end_sec"], str(s["speaker_tag"])) for s in data]
    return []


def _labelled(words: list[Word], turns: list[tuple[float, float, str]]) -> list[Word]:
    """Each word given the speaker whose stretch overlaps it most (none: dropped)."""
    out = []
    for w in words:
        overlap = {}
        for start, end, who in turns:
            overlap[who] = overlap.get(who, 0.0) + max(0.0, min(end, w.end) - max(start, w.start))
        who = max(overlap, key=overlap.get) if overlap else ""
        if who and overlap[who] > 0:
            out.append(Word(w.text, w.start, w.end, who))
    return out


def _words_tagged(wav: Path) -> list[Word]:
    """A recording whose labels are a speaker-tagged word list (no times): Whisper's words
    matched to it in order."""
    stem = wav.name.removesuffix("_16k.wav")
    tagged = json.loads((wav.parent / f"{stem}.words.json").read_text())["words"]
    heard = words_of(wav)
    out, j = [], 0
    for w in heard:
        for k in range(j, min(j + 3, len(tagged))):  # Whisper may drop or add a word
            if tagged[k]["word"] == w.bare:
                out.append(Word(w.text, w.start, w.end, str(tagged[k]["speaker_tag"])))
                j = k + 1
                break
    return out


def conversation_cases(root: Path | None = None, pauses_ms: tuple[int, ...] = PAUSES_MS) -> list[Case]:
    """Set (a): every gap between words in the dialogue recordings."""
    folder = (root or shared_audio()) / "dialogue"
    cases: list[Case] = []
    for wav in sorted(folder.glob("*_16k.wav")):
        turns = speaker_turns(wav)
        if turns:
            words = _labelled(words_of(wav), turns)
        elif (wav.parent / f"{wav.name.removesuffix('_16k.wav')}.words.json").is_file():
            words = _words_tagged(wav)
        else:
            continue
        cases += _gaps(wav, read_wav_16k_mono(wav), words, turns, pauses_ms)
    return cases


def _gaps(wav: Path, pcm: bytes, words: list[Word], turns: list[tuple[float, float, str]],
          pauses_ms: tuple[int, ...]) -> list[Case]:
    cases = []
    first = 0  # the first word of the current speaker's run
    for i in range(len(words) - 1):
        w, nxt = words[i], words[i + 1]
        gap = nxt.start - w.end
        if nxt.speaker != w.speaker:
            if gap >= 0.1 and not _other_talks(turns, w.speaker, words[first].start, w.end):
                # a finished turn: its audio, then the silence the bench adds (not the reply)
                body = _cut(pcm, words[first].start - CONTEXT_S, w.end + CONTEXT_S)
                cases.append(Case("a", "finished", f"{wav.stem}: ...{_text(words[max(first, i - 3):i + 1])}",
                                  body, int(gap * 1000), _text(words[first:i + 1]), w.end - words[first].start
                                  + CONTEXT_S))
            first = i + 1
            continue
        if gap < MIN_GAP_S:
            continue
        last = i + 1
        while last + 1 < len(words) and words[last + 1].speaker == w.speaker:
            last += 1
        if _other_talks(turns, w.speaker, words[first].start, words[last].end):
            continue  # overlapped by another voice: not this speaker's pause alone
        begin = words[first].start - CONTEXT_S
        name = f"{wav.stem}: {_text(words[max(first, i - 2):i + 1])} | {_text(words[i + 1:i + 3])}"
        before, at = _text(words[first:i + 1]), w.end - begin
        cases.append(Case("a", "pause", name, _cut(pcm, begin, words[last].end + CONTEXT_S), int(gap * 1000),
                          before, at))
        for pause in (p for p in pauses_ms if p > gap * 1000):  # the same place, the gap made longer
            head = _cut(pcm, begin, w.end + gap / 2)
            tail = _cut(pcm, w.end + gap / 2, words[last].end + CONTEXT_S)
            cases.append(Case("a", "pause", name, head + silence(max(0.0, pause / 1000 - gap)) + tail, pause,
                              before, at, real=False))
    return cases


def _other_talks(turns: list[tuple[float, float, str]], who: str, start: float, end: float) -> bool:
    """Another speaker's labelled stretch overlaps [start, end] by more than 0.2 s."""
    return any(w != who and min(e, end) - max(s, start) > 0.2 for s, e, w in turns)


# --- (b) read speech ------------------------------------------------------------------------

def read_clips(root: Path | None = None) -> list[Path]:
    root = root or shared_audio()
    manifest = json.loads((root / "manifest.json").read_text())
    return [root / c["path"] for c in manifest
            if c["kind"] == "speech" and "vad_labeled" not in c["path"] and c["duration_s"] < 20]


def _cut_after(pcm: bytes, word: Word, following: Word) -> float | None:
    """Where to cut so that the audio before ends on ``word``: the first of a few places
    near Whisper's boundary (the gap's middle, the word's end, up to 200 ms before it: tiny.en
    puts word ends late) whose audio Whisper hears ending on that word."""
    middle = (word.end + max(word.end, following.start)) / 2
    earlier = [word.end - d for d in (0.05, 0.1, 0.15, 0.2) if word.end - d > word.start + 0.04]
    for at in (middle, word.end, *earlier):
        if last_word_heard(_cut(pcm, 0, at) + silence(0.3)) == word.bare:
            return at
    return None


def read_speech_cases(root: Path | None = None, pauses_ms: tuple[int, ...] = PAUSES_MS) -> list[Case]:
    """Set (b): pauses after open words, and the clips ended at their sentence ends. A pause
    of 600 ms is 600 ms from the end of one word to the start of the next (the gap between
    the words, split in half, and silence put in the middle)."""
    cases: list[Case] = []
    for path in read_clips(root):
        pcm, words = read_wav_16k_mono(path), words_of(path)
        for i, w in enumerate(words[:-1]):
            if w.bare in OPEN_WORDS and i >= 1:
                gap = max(0.0, words[i + 1].start - w.end)
                cut = _cut_after(pcm, w, words[i + 1])
                if cut is None:
                    continue  # no cut found that ends on the open word (Whisper's times were off)
                head, tail = _cut(pcm, 0, cut), _cut(pcm, cut, len(pcm) / 2 / SAMPLE_RATE)
                for pause in pauses_ms:
                    cases.append(Case("b", "pause", f"{path.stem}: {_text(words[max(0, i - 2):i + 1])} | "
                                                    f"{_text(words[i + 1:i + 3])}",
                                      head + silence(max(0.0, pause / 1000 - gap)) + tail, pause,
                                      _text(words[:i + 1]), cut, real=False, after=_text(words[i + 1:])))
        for i, w in enumerate(words):
            if w.ends_sentence or i == len(words) - 1:
                end = w.end + CONTEXT_S if i + 1 == len(words) else (w.end + words[i + 1].start) / 2
                cases.append(Case("b", "finished", f"{path.stem}: ...{_text(words[max(0, i - 3):i + 1])}",
                                  _cut(pcm, 0, end), 0, _text(words[:i + 1]), w.end))
    return cases
