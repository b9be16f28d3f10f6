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
    key = shared_inputs.key_of(big)
    assert key is not None
    fd = shared_inputs.descriptor(key)
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
    assert shared_inputs.shared_count()  # the ViT-sized inputs were shared
    first, vandal, after = (outcomes[s].exercises[0] for s in ("first", "vandal", "next"))
    assert first.score == first.max_score > 0
    assert after.score == after.max_score  # what the next worker read was intact
    assert [t.status for t in after.tests] == [t.status for t in first.tests]
    assert vandal.score < vandal.max_score
    said = [t.message for t in vandal.tests if "memfds=" in t.message]
    assert said and all("hits=[]" in m for m in said), said
    assert any("memfds=0" not in m for m in said), said  # it held sealed inputs


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


# At each call: the sealed inputs this worker holds (its descriptors) and those its calls so
# far were sent (the memory files its arguments are mapped from); held but never named is a
# leak of an input built for another test or submission.
HOLDER = textwrap.dedent('''
    import os

    import numpy as np

    _NAMED = set()


    def _memfds_held():
        held = set()
        for name in os.listdir("/proc/self/fd"):
            try:
                target = os.readlink(f"/proc/self/fd/{name}")
            except OSError:
                continue
            if target.startswith("/memfd:grade-input-"):
                held.add(target.split()[0])
        return held


    def _mapped_from(value, maps):
        if isinstance(value, np.ndarray):
            at = value.__array_interface__["data"][0]
            return {path for lo, hi, path in maps if lo <= at < hi}
        if isinstance(value, (list, tuple)):
            return set().union(*(_mapped_from(v, maps) for v in value))
        return set()


    def attention_rollout(*args, **kwargs):
        maps = []
        for line in open("/proc/self/maps"):
            parts = line.split()
            if len(parts) >= 6 and parts[5].startswith("/memfd:grade-input-"):
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                maps.append((lo, hi, parts[5]))
        _NAMED.update(_mapped_from(list(args) + list(kwargs.values()), maps))
        raise ValueError(f"named={len(_NAMED)} unnamed={sorted(_memfds_held() - _NAMED)}")
''')


def test_a_worker_holds_only_the_shared_inputs_its_requests_named(tmp_path):
    """A worker is handed a sealed input with the request that names it, never the set built
    so far: graded after a submission that made the suite build (and share) every input, a
    file holds, at each of its calls, only inputs some call of its own was sent."""
    files = {}
    for sid, source in (("first", catalog.get(SLUG).solution.read_text()), ("holder", HOLDER)):
        (tmp_path / sid).mkdir()
        files[sid] = tmp_path / sid / f"{SLUG}.py"
        files[sid].write_text(source)
    other = np.ones(1 << 18)  # an input of another suite's, shared and never sent here
    other.flags.writeable = False
    shared_inputs.share(other)
    outcomes = {}
    grade_each([SLUG], iter([Job({SLUG: files[s]}, s) for s in files]),
               lambda job, outcome: outcomes.__setitem__(job.submission, outcome))
    assert shared_inputs.key_of(other) is not None
    said = [t.message for t in outcomes["holder"].exercises[0].tests if "named=" in t.message]
    assert len(said) >= 5, said
    assert any("named=0" not in m for m in said), said  # it was sent shared inputs
    assert all(m.endswith("unnamed=[]") for m in said), said
