"""The corpus's bad campaign files that a host refuses (tests/bad_inputs/campaigns/on_host/):
`rig campaign run` takes the emulated rig's lock under /run/rig before it checks what the host's
kernel can run, so it refuses them only as root; each gets exit status 2, one line, nothing
written (the rest of the corpus: tests/unit/test_bad_inputs.py)."""

from __future__ import annotations

import pytest

from fixtures.bad_inputs import ON_HOST, recorded, refuse_campaign_file, scratch  # noqa: F401


@pytest.mark.parametrize("path", ON_HOST, ids=lambda p: p.stem)
def test_bad_campaign_file(scratch, path):
    refuse_campaign_file(scratch, path)
