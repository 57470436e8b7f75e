"""mdfio.pairing.alternate: the rounds' order, directories and ratios."""
from mdfio.pairing import alternate


def runs_recorded(tmp_path, by_phase):
    """alternate over a reference and two variants whose rates are fixed
    ratios of the reference's; (its result, the (run, phase, directory)
    calls in order)."""
    calls = []
    made = []

    def fresh_dir(name):
        d = tmp_path / name
        d.mkdir()
        made.append(d)
        return d

    def run(name, factor):
        def phase(root, ph):
            assert root.is_dir() and not (root / ph).exists()
            calls.append((name, ph, root.name))
            (root / ph).write_text("")
            return 100.0 * factor
        return phase

    got = alternate({"base": run("base", 1), "a": run("a", 2), "b": run("b", 0.5)}, "base", 3, fresh_dir,
                    ("p1", "p2"), by_phase)
    assert not any(d.exists() for d in made)
    return got, calls


def test_each_round_reverses_the_order_and_gives_ratios_to_the_reference(tmp_path):
    got, calls = runs_recorded(tmp_path, by_phase=False)
    assert got == {"a": {"p1": [2.0] * 3, "p2": [2.0] * 3}, "b": {"p1": [0.5] * 3, "p2": [0.5] * 3}}
    forward = [(v, ph) for v in ("base", "a", "b") for ph in ("p1", "p2")]
    backward = [(v, ph) for v in ("b", "a", "base") for ph in ("p1", "p2")]
    assert [c[:2] for c in calls] == forward + backward + forward
    # a directory of its own per run and round
    assert len({c[2] for c in calls}) == 9


def test_by_phase_runs_each_phase_for_all_back_to_back(tmp_path):
    _, calls = runs_recorded(tmp_path, by_phase=True)
    assert [c[:2] for c in calls[:6]] == [("base", "p1"), ("a", "p1"), ("b", "p1"),
                                          ("b", "p2"), ("a", "p2"), ("base", "p2")]
    assert [c[:2] for c in calls[6:12]] == [("b", "p1"), ("a", "p1"), ("base", "p1"),
                                            ("base", "p2"), ("a", "p2"), ("b", "p2")]
