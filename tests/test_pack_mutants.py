"""Every generated mutant of every reference, in CI: ``grade pack check SLUG --grade --mutants
all`` finds no problem (each non-equivalent mutant loses a point and names no false cause, no
advice shown for it breaks its precondition). ``./dev check`` and ``tests/test_pack.py`` grade a
seeded sample of 4 per exercise; this grades them all (about 1,060, a quarter of an hour on two
cores, most of it positional_attention's trainings), so it runs where ``CI=true`` (``.ci/run``),
and by hand with ``CI=true ./dev test tests/test_pack_mutants.py``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader import catalog

GRADE = str(Path(sys.executable).with_name("grade"))


@pytest.mark.skipif(os.environ.get("CI") != "true",
                    reason="every mutant of the pack, a quarter of an hour: CI only (CI=true)")
@pytest.mark.parametrize("slug", list(catalog.load()))
@pytest.mark.timeout(3000)  # positional_attention's 150 mutants each train a model
def test_every_mutant_of_the_reference_loses_a_point(slug):
    done = subprocess.run([GRADE, "pack", "check", slug, "--grade", "--mutants", "all",
                           "--shortcuts", "0"], capture_output=True, text=True, timeout=3000)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert "Mutants killed (every mutant" in done.stdout, done.stdout[-2000:]
