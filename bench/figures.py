"""How the benches print a figure: a quantile of seconds as whole milliseconds."""

from __future__ import annotations


def ms(values: list[float], q: float) -> str:
    """The ``q`` quantile of ``values`` (seconds; the nearest rank) in ms, or "-" for none."""
    if not values:
        return "-"
    ordered = sorted(values)
    return f"{ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] * 1000:.0f}"
