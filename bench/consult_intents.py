"""What a visitor wants of a consultation, turn by turn: ``robot/consult/intents.py`` on single
utterances labelled by a helper from the persona and knowledge files alone
(bench/data/consult_intents_dev.yaml, and its blind twin, never tuned on).

    .venv/bin/python bench/consult_intents.py [--sets dev blind] [--offers] [--misses]

The word lists (``consult_words.txt``, what reads a turn without the sentence model) and the
model by meaning (``intent_model.py``), in one run. Per intent: precision and recall; the share of turns whose intents are read
exactly; near misses ("we dropped our bags at the hotel") given an intent. ``--offers`` also
names the offer of each turn that names one (``named_offers``, the knowledge search by names and
by meaning: loads the sentence model) and counts the right one first. The time to read a turn
(p50, p95) is printed for both; on a shared machine compare the two within one run. ``--chat N``: N lines of
each Multi-Session Chat session (../shared/data/msc), where any intent read is a false one.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from config.loader import load_persona  # noqa: E402
from robot.consult.intents import Intent, by_words, intents, named_offers  # noqa: E402

CHAT = ROOT.parent / "shared/data/msc"  # Multi-Session Chat: small talk no request is in
SETS = {"dev": ROOT / "bench/data/consult_intents_dev.yaml", "blind": ROOT / "bench/data/consult_intents_blind.yaml"}


SHOPS: dict[str, tuple] = {}


def score(items: list[dict], how: str, offers: bool, misses: bool) -> list[str]:
    tp, fp, fn = Counter(), Counter(), Counter()
    exact = near = near_hit = 0
    named = named_right = 0
    took = []
    for item in items:
        gold = {Intent(i) for i in item["intents"]}
        book, index = _shop(item["persona"])
        start = time.perf_counter()
        got = by_words(item["text"]) if how == "words" else intents(item["text"], book, index)
        took.append(time.perf_counter() - start)
        for i in Intent:
            tp[i] += i in got and i in gold
            fp[i] += i in got and i not in gold
            fn[i] += i not in got and i in gold
        exact += got == gold
        if "near miss" in str(item.get("note", "")):
            near += 1
            near_hit += bool(got)
        if misses and got != gold:
            print(f"  intents {sorted(g.value for g in got)} for {sorted(g.value for g in gold)}: {item['text']}",
                  file=sys.stderr)
        if offers and item.get("offer"):
            found = named_offers(item["text"], book, index)
            named += 1
            right = bool(found.offers) and found.offers[0].name == item["offer"]
            named_right += right
            if misses and not right:
                said = found.offers[0].name if found.offers else "none"
                print(f"  offer {said} for {item['offer']}: {item['text']}", file=sys.stderr)
    out = []
    for i in Intent:
        p = tp[i] / (tp[i] + fp[i]) if tp[i] + fp[i] else 0.0
        r = tp[i] / (tp[i] + fn[i]) if tp[i] + fn[i] else 0.0
        out.append(f"  {i.value:9s} precision {p:.2f}  recall {r:.2f}  ({tp[i] + fn[i]} said)")
    out.append(f"  turns read exactly {exact}/{len(items)} ({exact / len(items):.0%}); "
               f"near misses given an intent {near_hit}/{near}")
    took.sort()
    out.append(f"  ms per turn p50 {1000 * took[len(took) // 2]:.1f}, p95 {1000 * took[int(0.95 * (len(took) - 1))]:.1f}")
    if offers:
        out.append(f"  offer named first {named_right}/{named}")
    return out


def chat(n: int) -> list[str]:
    """Open conversation read as if said at the counter: every intent read there is a false one
    (a "book" hands the visitor to staff). Session 2 was looked at while the examples were
    written; session 3 was not."""
    import json
    import random

    book, index = _shop("travel_agent")
    out = []
    for session in sorted(p.name for p in CHAT.iterdir() if (p / "test.txt").is_file()):
        lines = [t["text"] for row in (CHAT / session / "test.txt").read_text().splitlines() if row.strip()
                 for t in json.loads(row)["dialog"]]
        sample = random.Random(1).sample(lines, min(n, len(lines)))
        for how, read in (("words", by_words), ("meaning", lambda t: intents(t, book, index))):
            got = [read(t) for t in sample]
            out.append(f"chat {session} ({len(sample)} lines), by {how}: an intent read on {sum(bool(g) for g in got)}, "
                       f"book {sum(Intent.BOOK in g for g in got)}, recommend {sum(Intent.RECOMMEND in g for g in got)}")
    return out


def _shop(persona_name: str) -> tuple:
    if persona_name not in SHOPS:
        SHOPS[persona_name] = _load_shop(persona_name)
    return SHOPS[persona_name]


def _load_shop(persona_name: str) -> tuple:
    from robot.app.runtime import understanding_of
    from robot.consult.offers import OfferBook
    from robot.dialogue.knowledge import ShopKnowledge
    from config.loader import load_settings

    persona = load_persona(ROOT / "config/personas" / f"{persona_name}.yaml")
    knowledge = ShopKnowledge.of_persona(persona, 300, understanding_of(load_settings(None)))
    knowledge.embed()  # the intents' examples too, as the robot's background thread does
    k = persona.knowledge
    return OfferBook.of_persona(k.offers, k.entries, k.base), knowledge.index


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="+", default=["dev", "blind"], choices=sorted(SETS))
    parser.add_argument("--offers", action="store_true", help="also the offer each turn names (loads the models)")
    parser.add_argument("--misses", action="store_true", help="each turn read wrong, on stderr")
    parser.add_argument("--chat", type=int, default=600, help="lines of open conversation, each session (0: none)")
    args = parser.parse_args()
    if args.chat and CHAT.is_dir():
        print("\n".join(chat(args.chat)))
    for name in args.sets:
        items = yaml.safe_load(SETS[name].read_text())
        for how in ("words", "meaning"):
            print(f"{name} ({len(items)} turns, {SETS[name].relative_to(ROOT)}), by {how}")
            print("\n".join(score(items, how, args.offers and how == "meaning", args.misses and name == "dev"
                                   and how == "meaning")))


if __name__ == "__main__":
    main()
