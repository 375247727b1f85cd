"""The reference recordings in tests/data are unchanged copies of the originals.

The generator vectors and runtime traces were recorded from verl-agent's code;
conformance to them is only meaningful while they are exactly what was recorded.
"""

from __future__ import annotations

import hashlib
import re

import pytest

from conftest import SHARED_VECTORS, TEST_DATA

PROVENANCE = TEST_DATA / "PROVENANCE.md"
ROW = re.compile(r"^\| `([^`]+)` \| `([0-9a-f]{64})` \|$", re.M)
DIGESTS = dict(ROW.findall(PROVENANCE.read_text(encoding="utf-8")))


def test_provenance__lists_every_reference_file_in_tests_data():
    on_disk = {path.name for path in TEST_DATA.iterdir()} - {PROVENANCE.name}
    assert set(DIGESTS) == on_disk


@pytest.mark.parametrize("name", sorted(DIGESTS))
def test_reference_copy__has_the_recorded_sha256(name):
    assert hashlib.sha256((TEST_DATA / name).read_bytes()).hexdigest() == DIGESTS[name]


@pytest.mark.parametrize("name", sorted(DIGESTS))
def test_reference_copy__is_byte_identical_to_the_shared_original_where_present(name):
    original = SHARED_VECTORS / name
    if not SHARED_VECTORS.is_dir():
        pytest.skip("../shared/vectors is not beside this clone; the recorded SHA-256 was checked instead")
    assert (TEST_DATA / name).read_bytes() == original.read_bytes()
