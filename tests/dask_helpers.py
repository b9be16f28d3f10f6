"""A real Dask cluster on loopback for the tests (the ``dask_procs`` fixture of conftest.py):
the TLS recipe of docs/cluster.md (``tls_config``), and a ``dask scheduler`` with the ``dask
worker`` processes a test adds to it (``DaskProcesses``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

BIN = Path(sys.executable).parent
LOOPBACK_ONLY = ["--host", "127.0.0.1", "--no-dashboard", "--dashboard-address", "127.0.0.1:0"]


def tls_config(folder: Path) -> dict[str, object]:
    """The recipe of docs/cluster.md in ``folder``: one self-signed certificate and key for
    every role (a shorter key), and the ``distributed.yaml`` naming them; returns those
    settings."""
    pem, key = folder / "dask.pem", folder / "dask.key"
    if shutil.which("openssl"):
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                        "-subj", "/CN=dask-grader", "-keyout", str(key), "-out", str(pem)],
                       check=True, capture_output=True)
    else:
        from distributed.security import Security

        made = Security.temporary()
        pem.write_text(made.tls_ca_file)
        key.write_text(made.tls_client_key)
    roles = "".join(f"      {role}: {{cert: {pem}, key: {key}}}\n"
                    for role in ("scheduler", "worker", "client"))
    (folder / "distributed.yaml").write_text(
        "distributed:\n  comm:\n    require-encryption: true\n    tls:\n"
        f"      ca-file: {pem}\n{roles}")
    settings: dict[str, object] = {"distributed.comm.require-encryption": True,
                                   "distributed.comm.tls.ca-file": str(pem)}
    for role in ("scheduler", "worker", "client"):
        settings[f"distributed.comm.tls.{role}.cert"] = str(pem)
        settings[f"distributed.comm.tls.{role}.key"] = str(key)
    return settings


class DaskProcesses:
    """A ``dask scheduler`` on loopback and the ``dask worker`` processes added to it, which
    read their TLS settings from the Dask configuration (``DASK_CONFIG``)."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.procs = folder, []
        file = folder / "scheduler.json"
        self._start([str(BIN / "dask"), "scheduler", *LOOPBACK_ONLY, "--port", "0",
                     "--scheduler-file", str(file)], "scheduler")
        deadline = time.monotonic() + 60
        while not file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        self.address = json.loads(file.read_text())["address"]
        assert self.address.startswith("tls://127.0.0.1:")

    def _start(self, argv: list[str], name: str, env: dict | None = None) -> subprocess.Popen:
        log = open(self.folder / f"{name}.log", "w")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                env={**os.environ, **(env or {})})
        self.procs.append(proc)
        return proc

    def worker(self, name: str, *extra: str, env: dict | None = None) -> subprocess.Popen:
        return self._start([str(BIN / "dask"), "worker", self.address, "--nthreads", "1",
                            "--no-nanny", *LOOPBACK_ONLY, "--name", name, *extra], name, env)

    def wait_for(self, n: int) -> None:
        from distributed import Client

        with Client(self.address, timeout=30) as client:
            client.wait_for_workers(n, timeout=60)

    def close(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
