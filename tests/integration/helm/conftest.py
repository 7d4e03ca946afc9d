"""pytest's view of the chart tests: a case fails when one of its checks did
(chart_support.check collects them, so that a case reports them all)."""
import os
import sys

import pytest

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chart_support import failures  # noqa: E402


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    before = len(failures)
    outcome = yield
    failed = failures[before:]
    if failed and outcome.excinfo is None:
        pytest.fail(f"{len(failed)} checks failed: {failed}", pytrace=False)
