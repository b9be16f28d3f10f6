"""Large suite inputs reach workers through sealed shared memory: the same verdicts as through
the pipe, a learner may change its own copy freely, and no learner can change what the next
worker reads (the memory file is sealed against writes and resizes)."""

from __future__ import annotations

import fcntl
import json
import mmap
import os
import textwrap

import numpy as np
import pytest
from conftest import reference_variant

from grader import catalog
from grader.engine.runner import Job, grade_each
from grader.sandbox import shared_inputs

SLUG = "attention_rollout"

# Changes every array it is given in place, then writes, truncates and maps writable every
# file descriptor it can find; then answers with the reference on the damaged inputs.
VANDAL = textwrap.dedent('''
    import mmap, os
    import numpy as np

    def _attack():
        hits, memfds = [], 0
        for name in os.listdir("/proc/self/fd"):
            fd = int(name)
            if fd < 3:
                continue
            try:
                memfds += os.readlink(f"/proc/self/fd/{fd}").startswith("/memfd:")
            except OSError:
                pass
            for how, act in (("write", lambda: os.pwrite(fd, b"\\0" * 64, 128)),
                             ("truncate", lambda: os.ftruncate(fd, 0)),
                             ("map", lambda: mmap.mmap(fd, 4096, flags=mmap.MAP_SHARED,
                                                       prot=mmap.PROT_WRITE)[:8])):
                try:
                    act()
                    hits.append((fd, how))
                except (OSError, ValueError):
                    pass
        return hits, memfds

    def attention_rollout(A_layers, n_prefix, H_p, W_p, head_fusion="mean",
                          add_residual=True):
        for A in A_layers:
            A[...] = 0.0  # its own copy: allowed, and seen by no one else
        hits, memfds = _attack()
        raise ValueError(f"memfds={memfds} hits={hits}")
''')


def test_a_sealed_input_cannot_be_written_resized_or_mapped_writable():
    big = np.arange(1 << 18, dtype=np.float64)  # 2 MiB
    big.flags.writeable = False
    shared_inputs.share(big)
    key = shared_inputs.lookup(frozenset(k for k, _ in shared_inputs.offered()))(big)
    assert key is not None
    fd = dict(shared_inputs.offered())[key]
    seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
    assert seals & fcntl.F_SEAL_WRITE and seals & fcntl.F_SEAL_SHRINK and seals & fcntl.F_SEAL_SEAL
    with pytest.raises(PermissionError):
        os.pwrite(fd, b"x", 200)
    with pytest.raises(PermissionError):
        os.ftruncate(fd, 0)
    with pytest.raises(PermissionError):
        mmap.mmap(fd, 4096, flags=mmap.MAP_SHARED, prot=mmap.PROT_WRITE)
    private = mmap.mmap(fd, os.fstat(fd).st_size, flags=mmap.MAP_PRIVATE,
                        prot=mmap.PROT_READ | mmap.PROT_WRITE)
    private[200:208] = b"\xff" * 8  # a private copy of that page
    again = mmap.mmap(fd, os.fstat(fd).st_size, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ)
    assert again[200:208] != b"\xff" * 8


def test_a_vandal_between_two_references_changes_nothing_they_read(tmp_path):
    reference = catalog.get(SLUG).solution.read_text()
    files = {}
    for sid, source in (("first", reference), ("vandal", VANDAL), ("next", reference)):
        (tmp_path / sid).mkdir()
        files[sid] = tmp_path / sid / f"{SLUG}.py"
        files[sid].write_text(source)
    outcomes = {}
    grade_each([SLUG], iter([Job({SLUG: files[s]}, s) for s in files]),
               lambda job, outcome: outcomes.__setitem__(job.submission, outcome))
    assert shared_inputs.offered()  # the ViT-sized inputs were shared
    first, vandal, after = (outcomes[s].exercises[0] for s in ("first", "vandal", "next"))
    assert first.score == first.max_score > 0
    assert after.score == after.max_score  # what the next worker read was intact
    assert [t.status for t in after.tests] == [t.status for t in first.tests]
    assert vandal.score < vandal.max_score
    said = next(t.message for t in vandal.tests if "memfds=" in t.message)
    assert "hits=[]" in said and "memfds=0" not in said, said  # it held sealed inputs


def test_the_verdicts_are_the_same_without_shared_memory(tmp_path, monkeypatch):
    wrong = reference_variant(SLUG, ("0.5 * A.mean(axis=0) + 0.5 * np.eye(T)", "A.mean(axis=0)"))
    path = tmp_path / f"{SLUG}.py"
    path.write_text(wrong)
    runs = {}
    for mode in ("1", "0"):
        monkeypatch.setenv("GRADER_SHARED_INPUTS", mode)
        outcomes: list = []
        grade_each([SLUG], iter([Job({SLUG: path}, "a"), Job({SLUG: path}, "b")]),
                   lambda job, outcome, into=outcomes: into.append(outcome))
        runs[mode] = [(t.name, t.status, t.score, t.message) for t in
                      outcomes[-1].exercises[0].tests]
    assert any("without the residual term" in said for *_, said in runs["1"]), runs["1"]
    assert runs["1"] == runs["0"]


def test_only_the_grader_may_name_a_shared_input():
    from grader.sandbox.harness import protocol

    raw = json.dumps({"value": {"$m": "i0"}, "blobs": []}).encode()  # a forged reply
    with pytest.raises(protocol.ProtocolError, match="unknown tag"):
        protocol.value_from_bytes(protocol.HEADER.pack(len(raw)) + raw)
