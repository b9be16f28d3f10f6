"""How a CUDA worker's device is known: observed through NVML where it can be (a fake NVML
here: no test depends on a GPU), self-reported elsewhere."""

from __future__ import annotations

import sys
import types

import pytest

from grader.sandbox import gpu_watch


def _fake_nvml(pids_per_device: list[list[int]], fail: bool = False) -> types.ModuleType:
    nvml = types.ModuleType("pynvml")

    def init() -> None:
        if fail:
            raise RuntimeError("NVML Shared Library Not Found")

    nvml.nvmlInit = init
    nvml.nvmlDeviceGetCount = lambda: len(pids_per_device)
    nvml.nvmlDeviceGetHandleByIndex = lambda i: i
    nvml.nvmlDeviceGetComputeRunningProcesses = \
        lambda h: [types.SimpleNamespace(pid=p) for p in pids_per_device[h]]
    return nvml


@pytest.fixture
def nvml(monkeypatch):
    def install(module: types.ModuleType | None) -> None:
        monkeypatch.setitem(sys.modules, "pynvml", module)
        gpu_watch._nvml.cache_clear()

    yield install
    gpu_watch._nvml.cache_clear()


@pytest.mark.parametrize("devices, fail, pid, expected", [
    ([[11, 12], [40]], False, 40, gpu_watch.OBSERVED),
    ([[11, 12], [40]], False, 41, gpu_watch.NOT_SEEN),
    ([[]], False, 41, gpu_watch.NOT_SEEN),
    ([[41]], True, 41, gpu_watch.SELF_REPORTED),       # no driver
    ([[41]], False, None, gpu_watch.SELF_REPORTED),    # no learner process known
], ids=["on_a_gpu", "not_on_any", "no_process_at_all", "nvml_fails", "pid_unknown"])
def test_evidence(nvml, devices, fail, pid, expected):
    nvml(_fake_nvml(devices, fail))
    assert gpu_watch.evidence(pid) == expected


def test_without_nvml_the_device_is_self_reported(nvml):
    nvml(None)  # `import pynvml` raises ImportError
    assert gpu_watch.gpu_pids() is None
    assert gpu_watch.evidence(123) == gpu_watch.SELF_REPORTED
