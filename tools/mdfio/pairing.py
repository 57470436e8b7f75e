"""Paired measurements: variants run against a reference in rounds, each
in a fresh directory of its own, in an order reversed every other round,
so that a drift of the machine over a round, or the cost of going first,
favours no one; each variant's result is its ratio to the reference of the
same round."""
from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

# run(root, phase) -> a rate (objects/s) of one phase in root
PhaseRun = Callable[[Path, str], float]


def alternate(runs: Mapping[str, PhaseRun], reference: str, rounds: int, fresh_dir: Callable[[str], Path],
              phases: Sequence[str], by_phase: bool) -> dict[str, dict[str, list[float]]]:
    """{variant: {phase: [its rate as a ratio to the reference's, one per
    round]}} for every run but the reference. runs maps a name to
    run(root, phase) -> a rate, the reference's among them; fresh_dir(name)
    gives an empty directory (Filesystem.fresh_dir), removed after its
    round. In each round every run has a directory of its own and goes in
    the order of runs, reversed every other round: its whole cycle of
    phases, or with by_phase each phase for all of them back to back (so
    that the rates compared are seconds apart; on a file system of a
    device one run's writeback would slow the next one's phase)."""
    names = [reference, *(v for v in runs if v != reference)]
    ratios = {v: {ph: [] for ph in phases} for v in names[1:]}
    for n in range(rounds):
        roots = {v: fresh_dir(f"r{n}-{k}") for k, v in enumerate(names)}
        order = names if n % 2 == 0 else names[::-1]
        if by_phase:
            steps = [(v, ph) for m, ph in enumerate(phases) for v in (order if m % 2 == 0 else order[::-1])]
        else:
            steps = [(v, ph) for v in order for ph in phases]
        rate: dict[str, dict[str, float]] = {v: {} for v in names}
        for v, ph in steps:
            rate[v][ph] = runs[v](roots[v], ph)
        for v in names[1:]:
            for ph in phases:
                ratios[v][ph].append(rate[v][ph] / rate[reference][ph])
        for root in roots.values():
            shutil.rmtree(root)
    return ratios
