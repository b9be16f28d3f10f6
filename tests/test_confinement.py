"""The worker's confinement as a typed value: what the grader makes is what the worker applies,
across the fork server's JSON hop, and a spec with other keys is refused; the folders a worker
of another uid is let through (``readable.reveal_plan``)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from grader.sandbox import isolation, readable
from grader.sandbox.harness.confinement import Confinement

EVERY_LAYER = Confinement(
    cpu_seconds=600, file_bytes=64 << 20, open_files=256, address_space_bytes=8 << 30,
    processes=128, cgroups=("/sys/fs/cgroup/memory/vit-grader/w1-1",), namespaces="root",
    pid_namespace=True, ipc_namespace=True, tmpfs_bytes=256 << 20, drop_capabilities=True,
    seccomp=True, landlock_abi=6, readable=("/usr", "/lib"), listable=("/site",),
    workdir="/dev/shm/grade-worker-1-x", devices=("/dev/nvidia0", "/dev/nvidiactl"),
    uid=2_000_001, reveal=(("/root", ("/root/.venv",)), ("/home/a", ("/home/a/b", "/home/a/c"))))


def _hop(confinement: Confinement) -> Confinement:
    """What the fork server's child gets: the spawn message's JSON, read back."""
    return Confinement.from_dict(json.loads(json.dumps(confinement.to_dict())))


def test_every_field_survives_the_fork_servers_json_hop():
    assert _hop(EVERY_LAYER) == EVERY_LAYER
    layers_off = dataclasses.replace(
        EVERY_LAYER, address_space_bytes=None, cgroups=(), namespaces=None, tmpfs_bytes=None,
        landlock_abi=0, readable=(), listable=(), devices=(), uid=None, reveal=())
    assert _hop(layers_off) == layers_off


def test_this_machines_worker_confinement_survives_the_hop(tmp_path):
    confinement = isolation.Sandbox("cpu").confinement(tmp_path)
    assert _hop(confinement) == confinement
    assert confinement.workdir == str(tmp_path) and confinement.devices == ()


@pytest.mark.parametrize(("change", "said"), [
    (lambda d: d.update(netns="root"), "(unknown netns)"),
    (lambda d: d.pop("seccomp"), "(missing seccomp)"),
    (lambda d: (d.pop("uid"), d.update(cpu_s=1)), "(unknown cpu_s; missing uid)"),
])
def test_a_spec_whose_keys_are_not_the_fields_is_refused_in_one_sentence(change, said):
    data = EVERY_LAYER.to_dict()
    change(data)
    with pytest.raises(ValueError) as refused:
        Confinement.from_dict(data)
    message = str(refused.value)
    assert message == ("a confinement spec must have exactly the fields of Confinement "
                       + said)


def test_a_worker_of_another_uid_is_let_through_each_closed_folder_once(monkeypatch):
    """Each folder others cannot pass through above a path (``/`` and a relative path's first
    part aside), with its entries on the way, outermost first; paths spelled as pathlib
    reads them (``//`` kept at the start, ``.`` and repeated or trailing slashes dropped)."""
    closed = {"/r", "/r/a", "/r/a/b", "/h", "/h/u", "//n", "x/y"}
    monkeypatch.setattr(readable, "_searchable", lambda folder: folder not in closed)
    readable._covers.cache_clear()
    try:
        plan = readable.reveal_plan(("/r/a/b/c", "/r/a/d", "/r", "/h/u/", "/h/u/w//v/./z",
                                     "//n/m", "x/y/z", "/", "", "/ok/a/b"))
        assert readable.reveal_plan(("/r/a/d", "/r/a/d")) == (("/r", ("/r/a",)),
                                                              ("/r/a", ("/r/a/d",)))
    finally:
        readable._covers.cache_clear()  # answers of the fake ``_searchable``
    assert plan == (("//n", ("//n/m",)), ("/h", ("/h/u",)), ("/r", ("/r/a",)),
                    ("x/y", ("x/y/z",)), ("/h/u", ("/h/u/w",)),
                    ("/r/a", ("/r/a/b", "/r/a/d")), ("/r/a/b", ("/r/a/b/c",)))
