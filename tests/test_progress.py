"""Progress: plain lines when standard error is not a terminal (a log must not fill with bar redraws)."""
import io

from simdesign.runner.progress import ProgressLines, progress_bar


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_log_gets_plain_lines_and_a_terminal_a_bar():
    log = io.StringIO()
    lines = progress_bar(100, "quick", stream=log)
    assert isinstance(lines, ProgressLines)
    with lines:
        for _ in range(100):
            lines.update(1)
    text = log.getvalue()
    assert "\r" not in text  # no carriage-return redraws
    assert text.count("\n") == 1 and text.startswith("quick: 100/100 trials (100%)")  # only the final line here
    bar = progress_bar(10, "quick", stream=Terminal())
    assert not isinstance(bar, ProgressLines)
    bar.close()


def test_plain_lines_come_at_most_every_interval_and_count_resumed_trials():
    log = io.StringIO()
    lines = ProgressLines(1000, "resumed", initial=400, stream=log, interval=0.0)  # every update prints
    lines.update(100)
    lines.update(100)
    lines.close()
    printed = log.getvalue().splitlines()
    assert printed[0].startswith("resumed: 500/1000 trials (50%)") and "left" in printed[0]
    assert printed[-1].startswith("resumed: 600/1000 trials (60%)")
    quiet = io.StringIO()
    ProgressLines(10, "nothing new", initial=10, stream=quiet).close()  # a run with nothing to compute says nothing
    assert quiet.getvalue() == ""
    assert progress_bar(10, "off", enabled=False, stream=io.StringIO()).disable


def test_the_unit_is_in_the_plural_in_english():
    # issue 39: the predictive check's line read "studys"
    log = io.StringIO()
    with progress_bar(3, "predictive check", unit="study", stream=log) as lines:
        lines.update(3)
    text = log.getvalue()
    assert text.startswith("predictive check: 3/3 studies (100%)") and "studies/s" in text and "studys" not in text
