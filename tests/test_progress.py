"""silva._progress: progress display for loops over trees."""

import io

import numpy as np
import pytest

from silva import _progress
from silva._progress import progress


def test_disabled_returns_the_iterable_itself():
    items = [1, 2, 3]
    assert progress(items) is items
    assert progress(items, enabled=0, desc="x") is items


def test_plain_counter_without_tqdm(monkeypatch):
    monkeypatch.setattr(_progress, "_load_tqdm", lambda: None)
    monkeypatch.setattr(_progress, "_MIN_INTERVAL", 0.0)  # print every step
    out = io.StringIO()
    assert list(progress(range(4), enabled=True, desc="forest", file=out)) == [0, 1, 2, 3]
    frames = out.getvalue().split("\r")
    assert frames[1:5] == ["forest: 1/4", "forest: 2/4", "forest: 3/4", "forest: 4/4"]
    assert frames[-1].startswith("forest: 4/4 done in ") and frames[-1].endswith("s\n")


def test_plain_counter_goes_to_stderr_and_handles_unknown_length(monkeypatch, capsys):
    monkeypatch.setattr(_progress, "_load_tqdm", lambda: None)
    generator = (x * x for x in range(5))
    assert list(progress(generator, enabled=True)) == [0, 1, 4, 9, 16]
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "5 done in" in captured.err and "/" not in captured.err


def test_plain_counter_is_throttled(monkeypatch):
    monkeypatch.setattr(_progress, "_load_tqdm", lambda: None)
    out = io.StringIO()
    assert sum(progress(range(10_000), enabled=True, file=out)) == sum(range(10_000))
    # far fewer redraws than items: the last count and the summary at least
    assert out.getvalue().count("\r") < 100
    assert out.getvalue().endswith("\r10000/10000 done in " + out.getvalue().split(
        "done in ")[-1])


def test_counter_reports_an_early_stop(monkeypatch):
    monkeypatch.setattr(_progress, "_load_tqdm", lambda: None)
    out = io.StringIO()
    iterator = progress(range(10), enabled=True, desc="boost", file=out)
    for i in iterator:
        if i == 2:
            break
    iterator.close()
    assert "boost: 3/10 done in" in out.getvalue()


def test_tqdm_is_used_when_installed():
    tqdm = pytest.importorskip("tqdm")
    out = io.StringIO()
    bar = progress(range(3), enabled=True, desc="trees", file=out)
    assert isinstance(bar, tqdm.tqdm)
    assert list(bar) == [0, 1, 2]
    text = out.getvalue()
    assert "trees" in text and "3/3" in text


@pytest.mark.parametrize("name", ["RandomForestClassifier", "ExtraTreesRegressor",
                                  "AdaBoostClassifier", "GradientBoostingClassifier",
                                  "BaggingClassifier", "BaggingRegressor"])
def test_ensembles_show_progress_only_when_verbose(name, monkeypatch, capsys):
    import silva
    from silva import _progress

    monkeypatch.setattr(_progress, "_load_tqdm", lambda: None)  # the plain counter
    X = np.random.RandomState(0).rand(60, 3)
    y = (X[:, 0] + X[:, 1] > 1).astype(int)  # no stump is perfect: AdaBoost runs 3 rounds
    getattr(silva, name)(n_estimators=3, random_state=0).fit(X, y)
    assert capsys.readouterr().err == ""
    getattr(silva, name)(n_estimators=3, random_state=0, verbose=1).fit(X, y)
    assert f"{name}: 3/3" in capsys.readouterr().err
