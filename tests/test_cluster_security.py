"""An authenticated cluster: ``--scheduler local:N`` speaks TLS with credentials made for the
run, on loopback only, and refuses a client without them (plain, on tcp://, or with a
certificate of its own); a plain tcp:// scheduler is a usage error unless the user accepts it
with --allow-insecure-cluster, and a tls:// one needs the Dask configuration's credentials."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("distributed")
pytest.importorskip("cryptography")

GRADE = str(Path(sys.executable).parent / "grade")
REFUSED_WITHIN_S = 10.0  # a refused client gives up in its 3 s timeout, plus start-up
LOOPBACK_HEX = {"0100007F", "00000000000000000000000001000000"}  # /proc/net/tcp{,6}


@pytest.fixture(scope="module")
def local():
    """The cluster ``grade bulk --scheduler local:1`` connects to, its worker checked."""
    from grader.bulk import cluster

    found = cluster.connect("local:1")
    try:
        yield found
    finally:
        found.close()


def _listening(pid: int) -> list[tuple[str, int]]:
    """(hex address, port) of each TCP socket ``pid`` listens on."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                address, port = fields[1].split(":")
                found.append((address, int(port, 16)))
    return found


def _worker_facts(dask_worker) -> dict:
    return {"pid": os.getpid(), "address": dask_worker.address,
            "http": getattr(dask_worker, "http_server", None) is not None}


def _answers_http(port: int) -> bool:
    """Whether something on loopback ``port`` answers a plain HTTP request."""
    import socket

    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
            conn.sendall(b"GET /info/main/workers.html HTTP/1.0\r\nHost: x\r\n\r\n")
            return conn.recv(16).startswith(b"HTTP/")
    except OSError:
        return False


def test_a_local_cluster_speaks_tls_on_loopback_only_and_serves_no_http(local):
    """Every port of ``local:N`` (scheduler, nannies, workers) is on loopback and speaks TLS;
    none serves HTTP (no dashboard, no health, metrics or information pages: those answer
    whoever reaches the port, and show the workers, tasks and logs)."""
    assert local.good  # its worker grades over TLS
    assert local.local.scheduler_address.startswith("tls://127.0.0.1:")
    nannies = [w.address for w in local.local.workers.values()]
    assert nannies and all(a.startswith("tls://127.0.0.1:") for a in nannies)
    facts = list(local.client.run(_worker_facts).values())
    assert facts and all(f["address"].startswith("tls://127.0.0.1:") for f in facts)
    assert not any(f["http"] for f in facts)
    assert getattr(local.local.scheduler, "http_server", None) is None
    # every socket listening here (scheduler, nanny) and in the worker: loopback, no HTTP
    for pid in [os.getpid(), *(f["pid"] for f in facts)]:
        sockets = _listening(pid)
        assert sockets and all(address in LOOPBACK_HEX for address, _ in sockets), sockets
        assert not [port for _, port in sockets if _answers_http(port)], sockets


INTRUDER = """
import os, sys
from distributed import Client
from distributed.security import Security

security = None
if os.environ.get("INTRUDER_CA"):  # trusts the scheduler's certificate, shows a certificate
    security = Security(require_encryption=True, tls_ca_file=os.environ["INTRUDER_CA"],
                        tls_client_cert=os.environ["INTRUDER_CERT"],
                        tls_client_key=os.environ["INTRUDER_KEY"])
try:
    client = Client(sys.argv[1], timeout=3, security=security)
except (OSError, TimeoutError, TypeError) as exc:
    print("REFUSED", type(exc).__name__)
else:
    print("ADMITTED")
    client.close()
"""


def _intruder_env(local, how: str) -> dict[str, str]:
    if how != "own_certificate":
        return {}
    from distributed.security import Security

    own = Security.temporary()
    return {"INTRUDER_CA": local.local.security.tls_ca_file + own.tls_ca_file,
            "INTRUDER_CERT": own.tls_client_cert, "INTRUDER_KEY": own.tls_client_key}


@pytest.mark.parametrize("how", ["plain", "tcp", "own_certificate"])
def test_a_client_without_the_runs_credentials_is_refused(local, how):
    """Each intruder is a process of its own (an outside client), bounded in time."""
    address = local.local.scheduler_address
    if how == "tcp":
        address = address.replace("tls://", "tcp://")
    before = set(local.local.scheduler.clients)
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", INTRUDER, address], capture_output=True,
                          text=True, timeout=60, env={**os.environ, **_intruder_env(local, how)})
    assert done.stdout.startswith("REFUSED"), done.stdout + done.stderr[-2000:]
    assert time.monotonic() - start < REFUSED_WITHIN_S + 10  # an interpreter's start too
    assert set(local.local.scheduler.clients) == before


@pytest.mark.parametrize("address, who", [
    ("tcp://10.0.0.5:8786", "anyone who can reach that scheduler"),
    ("10.0.0.5:8786", "anyone who can reach that scheduler"),
    ("ws://grader.example:8786", "anyone who can reach that scheduler"),
    ("tcp://127.0.0.1:8786", "every user of this machine"),
    ("tcp://localhost:8786", "every user of this machine"),
    ("tcp://[::1]:8786", "every user of this machine"),
    ("tls://10.0.0.5:8786", None),
    ("local:2", None),
])
def test_only_tls_and_local_clusters_are_safe(address, who):
    from grader.bulk.cluster import insecure_risk

    risk = insecure_risk(address)
    if who is None:
        assert risk is None
    else:
        assert f"{address} is neither encrypted nor authenticated: {who} can run code" in risk


def _bulk(tmp_path: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    (tmp_path / "class" / "s00").mkdir(parents=True)
    (tmp_path / "class" / "s00" / "grid_local_mask.py").write_text("x = 1\n")
    return subprocess.run([GRADE, "bulk", str(tmp_path / "class"), "--out",
                           str(tmp_path / "out"), "--exercises", "grid_local_mask", "-q",
                           "--scheduler", *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})


@pytest.mark.parametrize("address, who", [
    ("tcp://10.0.0.5:8786", "anyone who can reach that scheduler"),
    ("tcp://127.0.0.1:8786", "every user of this machine"),
])
def test_a_plain_tcp_scheduler_is_a_usage_error(tmp_path, address, who):
    run = _bulk(tmp_path, address)
    assert run.returncode == 2, run.stderr
    assert (f"Error: --scheduler {address} is neither encrypted nor authenticated: {who} can "
            "run code as this user on every worker and read the submissions; use a tls:// "
            "address") in run.stderr
    assert "or pass --allow-insecure-cluster to accept that" in run.stderr
    assert "Traceback" not in run.stderr
    assert not (tmp_path / "out").exists()  # refused before any work


def test_an_accepted_plain_scheduler_is_warned_about(tmp_path):
    run = _bulk(tmp_path, "tcp://127.0.0.1:9", "--allow-insecure-cluster")
    assert ("warning: --scheduler tcp://127.0.0.1:9 is neither encrypted nor authenticated: "
            "every user of this machine can run code as this user") in run.stderr
    assert run.returncode == 2 and "cannot reach the Dask scheduler" in run.stderr, run.stderr


def test_a_tls_scheduler_needs_the_configurations_credentials(tmp_path):
    run = _bulk(tmp_path, "tls://127.0.0.1:9", env={
        "DASK_DISTRIBUTED__COMM__TLS__CA_FILE": "None",
        "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT": "None"})
    assert run.returncode == 2, run.stderr
    assert ("--scheduler tls://127.0.0.1:9: the Dask configuration has no TLS credentials for "
            "this client (distributed.comm.tls.ca-file and") in run.stderr
    assert "Traceback" not in run.stderr


def test_the_runs_own_credentials_let_a_client_in(local):
    """The control of the test above: the refusals come from the missing credentials."""
    own = local.local.security
    done = subprocess.run([sys.executable, "-c", INTRUDER, local.local.scheduler_address],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "INTRUDER_CA": own.tls_ca_file,
                               "INTRUDER_CERT": own.tls_client_cert,
                               "INTRUDER_KEY": own.tls_client_key})
    assert done.stdout.startswith("ADMITTED"), done.stdout + done.stderr[-2000:]


def test_an_accepted_plain_scheduler_is_refused_where_the_configuration_wants_tls(tmp_path):
    run = _bulk(tmp_path, "tcp://127.0.0.1:9", "--allow-insecure-cluster",
                env={"DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION": "True"})
    assert run.returncode == 2, run.stderr
    assert ("--scheduler tcp://127.0.0.1:9: the Dask configuration requires encryption "
            "(distributed.comm.require-encryption): use a tls:// address") in run.stderr
    assert "Traceback" not in run.stderr
