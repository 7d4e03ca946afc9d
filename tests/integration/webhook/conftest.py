"""pytest's view of webhook_test.py: a case fails when one of its checks did
(check() lets a case go on, so that it reports every broken check)."""
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    failed_checks = item.module.failed_checks
    before = len(failed_checks)
    outcome = yield
    failed = failed_checks[before:]
    if failed and outcome.excinfo is None:
        pytest.fail(f"{len(failed)} checks failed: {failed}", pytrace=False)
