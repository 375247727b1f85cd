"""What a test does when a dependency or reference it needs is missing.

Helper for tests (not a test file). On a developer's machine the test is
skipped with the reason; under ``CI=true`` it fails, because a CI run that
skips a conformance or loading-path test would report green without having
checked what users rely on.
"""

from __future__ import annotations

import os

import pytest


def unavailable(reason: str):
    """Skip (locally) or fail (under ``CI=true``) the calling test, saying ``reason``."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: a missing dependency or reference fails instead of skipping)")
    pytest.skip(reason)
