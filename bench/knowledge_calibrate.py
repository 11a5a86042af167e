"""Fit the knowledge's confidence (memory/recall/knowledge/calibration.json) on the development
questions, and say how well it does on sets it was not fitted on.

    .venv/bin/python bench/knowledge_calibrate.py            # fit on every development set, write the file
    .venv/bin/python bench/knowledge_calibrate.py --dry-run  # the figures only

Each development question (two-entry, mixed and attack items left out: they are answered by other
paths) is searched as the robot searches it; each of its eight reranked candidate entries gives
one row: its signals (``confidence.features``) and whether the entry holds the gold fact (1) or
not, or the files hold no answer (0). A logistic regression (L2, Newton's method, numpy) is
fitted on standardized signals; the search orders the candidates by its probability. The
threshold is the probability at which saying the first is worth it: a right answer counts 1, a
wrong one (a wrong fact, or an answer where staff should have been called) costs ``WRONG_COST``,
a hand-over 0 (questions a rule decides, such as no sentence of the kind asked, are left out). It
is chosen on out-of-set probabilities (each set's from a model fitted on the others), so it does
not reward a model that remembers its rows. ``--curve`` prints right and wrong answers at other
thresholds.

The blind sets (bench/blind/) are never read here.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from knowledge import DEV, REPO, _knowledge, has_fact  # noqa: E402

WRONG_COST = 2.0  # a wrong answer is twice as bad as a needless hand-over is good to avoid
L2 = 1.0


@dataclass
class Row:
    """One candidate entry for one question."""

    set: str
    question: int  # the question's number across all sets
    x: list[float]
    label: int  # the entry holds the gold fact
    judged: bool  # the question reaches the model with this entry first (no rule decides it)


def rows_of(path: Path, first: int) -> list[Row]:
    from config.loader import load_persona, load_settings
    from memory.recall.knowledge.confidence import features
    from memory.recall.knowledge.search import RERANK

    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    persona = load_persona((path.parent / spec["persona"]).resolve())
    knowledge = _knowledge(persona, load_settings())
    out = []
    for n, item in enumerate(spec["questions"]):
        if item.get("two_entry") or item.get("attack") or item.get("handover"):
            continue
        text = item["q"]
        knowledge.index.prepare(knowledge._texts_of(text))
        found = knowledge.index.search(text, [], k=RERANK)
        if found.confidence.broad or not found.signals or not found.signals[0].embedded:
            continue
        gold = item.get("gold")
        for hit, s in zip(found.hits, found.signals):
            said = " ".join(knowledge.index.best_sentences(hit))
            judged = s.kind_held and not s.payer and not s.topic
            out.append(Row(path.stem, first + n, features(s, found.question), int(bool(gold) and has_fact(said, gold)),
                           judged))
    return out


def fit(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale < 1e-6] = 1.0
    z = np.hstack([np.ones((len(x), 1)), (x - mean) / scale])
    w = np.zeros(z.shape[1])
    penalty = np.eye(z.shape[1]) * L2
    penalty[0, 0] = 0.0  # the bias is not shrunk
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-z @ w))
        gradient = z.T @ (p - y) + penalty @ w
        hessian = (z * (p * (1 - p))[:, None]).T @ z + penalty
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return mean, scale, w[1:], float(w[0])


def predict(model: tuple, x: np.ndarray) -> np.ndarray:
    mean, scale, weights, bias = model
    return 1.0 / (1.0 + np.exp(-(bias + ((x - mean) / scale) @ weights)))


def firsts(rows: list[Row], p: np.ndarray) -> list[tuple[Row, float]]:
    """Each question's candidate the model ranks first, and its probability."""
    best: dict[int, tuple[Row, float]] = {}
    for row, chance in zip(rows, p):
        if row.question not in best or chance > best[row.question][1]:
            best[row.question] = (row, float(chance))
    return list(best.values())


def scored(chosen: list[tuple[Row, float]], threshold: float) -> tuple[int, int]:
    """Right and wrong answers when the first is said at ``threshold`` (a rule stops the rest)."""
    said = [r for r, p in chosen if r.judged and p >= threshold]
    return sum(r.label for r in said), sum(1 - r.label for r in said)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=DEV, help="development question files")
    parser.add_argument("--dry-run", action="store_true", help="print the figures, write nothing")
    parser.add_argument("--curve", action="store_true", help="also right and wrong answers at other thresholds")
    args = parser.parse_args()
    if any("blind" in Path(s).parts for s in args.sets):
        sys.exit("the blind sets are never fitted on")
    rows: list[Row] = []
    for n, name in enumerate(args.sets):
        rows += rows_of(REPO / name, 10_000 * n)
    names = sorted({r.set for r in rows})
    x = np.array([r.x for r in rows])
    y = np.array([r.label for r in rows], dtype=float)
    sets = np.array([r.set for r in rows])
    held_out = np.zeros(len(rows))
    for name in names:  # each set's probabilities from a model that never saw it
        inside = sets != name
        held_out[~inside] = predict(fit(x[inside], y[inside]), x[~inside])
    chosen = firsts(rows, held_out)
    threshold = float(max(np.linspace(0.1, 0.9, 81),
                          key=lambda t: (lambda rw: rw[0] - WRONG_COST * rw[1])(scored(chosen, t))))
    if args.curve:
        for t in np.linspace(0.3, 0.85, 12):
            right, wrong = scored(chosen, t)
            print(f"  at {t:.2f}: {right} right, {wrong} wrong")
    model = fit(x, y)
    questions = len({r.question for r in rows})
    print(f"{questions} questions reach the model, {len(rows)} candidate entries; sets: {', '.join(names)}")
    print(f"threshold {threshold:.2f} (chosen on held-out-set probabilities, a wrong answer costing {WRONG_COST})")
    for name in names:
        mine = [(r, p) for r, p in chosen if r.set == name]
        right, wrong = scored(mine, threshold)
        print(f"  {name:16s} held out: {len(mine)} questions, the model's first holds the answer in "
              f"{sum(r.label for r, _ in mine)}; answered: {right} right, {wrong} wrong")
    from memory.recall.knowledge.confidence import CALIBRATION, FEATURES

    for name, weight in sorted(zip(FEATURES, model[2]), key=lambda nw: -abs(nw[1])):
        print(f"  weight {name:16s} {weight:+.2f}")
    if args.dry_run:
        return
    CALIBRATION.write_text(json.dumps({
        "names": list(FEATURES), "mean": [round(float(v), 6) for v in model[0]],
        "scale": [round(float(v), 6) for v in model[1]], "weights": [round(float(v), 6) for v in model[2]],
        "bias": round(model[3], 6), "threshold": round(threshold, 3),
        "fitted_on": sorted(str(s) for s in args.sets), "rows": len(rows), "wrong_cost": WRONG_COST,
    }, indent=1) + "\n", encoding="utf-8")
    print(f"written: {CALIBRATION.relative_to(REPO)}")


if __name__ == "__main__":
    main()
