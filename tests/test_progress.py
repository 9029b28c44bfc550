"""Progress bars: drawn on stderr when enabled, silent when disabled or off a terminal."""

import io
import sys

import pytest

from subgraph_ad import progress


@pytest.fixture(autouse=True)
def restore_setting():
    before = progress.enable(None)
    yield
    progress.enable(before)


def test_track_yields_the_items_unchanged_whatever_the_setting(capsys):
    for flag in (True, False, None):
        progress.enable(flag)
        assert list(progress.track(iter("abc"), "letters", total=3)) == ["a", "b", "c"]
    assert capsys.readouterr().out == ""  # bars never go to standard output


def test_an_enabled_bar_is_drawn_on_stderr(capsys):
    progress.enable(True)
    assert sum(progress.track(range(4), "summing", total=4, unit="term")) == 6
    err = capsys.readouterr().err
    # tqdm redraws at most every 0.1 s, so a quick loop shows its first state, then is cleared
    assert "summing:   0%" in err and "0/4" in err and "term/s" in err


def test_disabled_or_off_a_terminal_nothing_is_drawn(capsys):
    progress.enable(False)
    list(progress.track(range(3), "quiet", total=3))
    with progress.bar("quiet too", unit="node") as advance:
        advance()
    assert capsys.readouterr().err == ""
    progress.enable(None)  # captured stderr is not a terminal
    assert not sys.stderr.isatty() and not progress.is_enabled()
    list(progress.track(range(3), "not a terminal", total=3))
    assert capsys.readouterr().err == ""


def test_bar_counts_what_the_callback_reports(capsys):
    progress.enable(True)
    with progress.bar("building", unit="node") as advance:
        for _ in range(7):
            advance()
        assert advance.__self__.n == 7  # the tqdm instance behind the callback
    err = capsys.readouterr().err
    assert "building: 0node" in err


def test_enable_returns_the_previous_setting_and_refuses_other_values():
    assert progress.enable(True) is None
    assert progress.enable(False) is True and not progress.is_enabled()
    assert progress.enable(None) is False
    with pytest.raises(TypeError, match="enable\\(\\) takes True, False or None, got str 'yes'"):
        progress.enable("yes")  # type: ignore[arg-type]


def test_write_prints_a_whole_line_at_once(capsys):
    progress.enable(True)
    for k in progress.track(range(2), "rows", total=2):
        progress.write(f"row {k}")
    out, err = capsys.readouterr()
    assert out == "row 0\nrow 1\n" and "rows" in err
    stream = io.StringIO()
    progress.write("to a stream", file=stream)
    assert stream.getvalue() == "to a stream\n"
