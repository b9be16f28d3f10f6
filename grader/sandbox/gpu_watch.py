"""Which device a CUDA worker really used, observed from the grading process through NVML.

A worker's reply says on which device its tensors are, but the learner controls that reply.
Where NVML is available (``nvidia-ml-py``, imported as ``pynvml``, with an NVIDIA driver), the
grading process asks the driver which processes hold GPU memory and looks for the worker's
learner process among them. That shows the process used a GPU, not that every operation ran
there. Where NVML is not available the device is what the worker reported, and results say so
(``evidence()``).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

OBSERVED = "observed: the worker's process held GPU memory (NVML)"
NOT_SEEN = "not observed: the worker's process held no GPU memory (NVML)"
SELF_REPORTED = "self-reported by the worker (NVML is not available here)"


@lru_cache(maxsize=1)
def _nvml() -> Any:
    """The initialised ``pynvml`` module, or None."""
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml
    except Exception:  # noqa: BLE001 - no package, no driver, no GPU: all mean "cannot see"
        return None


def gpu_pids() -> set[int] | None:
    """Host pids of the processes that hold memory on any GPU, or None without NVML."""
    nvml = _nvml()
    if nvml is None:
        return None
    found: set[int] = set()
    try:
        for index in range(nvml.nvmlDeviceGetCount()):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            for query in (nvml.nvmlDeviceGetComputeRunningProcesses,
                          getattr(nvml, "nvmlDeviceGetGraphicsRunningProcesses", None)):
                if query is not None:
                    found |= {int(p.pid) for p in query(handle)}
    except Exception:  # noqa: BLE001 - a driver error is "cannot see", never a verdict
        return None
    return found


def evidence(pid: int | None) -> str:
    """How the device of a CUDA worker whose learner process is ``pid`` is known."""
    pids = gpu_pids()
    if pids is None or pid is None:
        return SELF_REPORTED
    return OBSERVED if pid in pids else NOT_SEEN
