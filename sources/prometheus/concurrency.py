"""How many requests a read keeps in flight.

``max_parallel_requests`` in the config wins when set. Unset, a read keeps 4 in flight,
except against a server on this machine (a loopback address, or this host's own name or
addresses): that server shares the reader's CPUs, and requests beyond those CPUs do not
make it serve faster but make it and the reader fight for them. Measured on a 2-vCPU VM
with Prometheus 2.42 on the same machine (benchmarks/README.md): 2 in flight read a
day of 256 GPUs 6 % faster than 4 (the server spent 0.1-0.27 CPU s less), the same bodies
fetched without decoding took as long either way, and 1 in flight was twice as slow.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from urllib.parse import urlsplit

REMOTE_DEFAULT = 4  # requests in flight to a server on other machines


def parallel_requests(configured: int | None, url: str) -> int:
    """Requests to keep in flight: ``configured``, else :data:`REMOTE_DEFAULT`, capped at the
    CPUs this process may use when the server at ``url`` runs on this machine."""
    if configured is not None:
        return configured
    if not on_this_machine(urlsplit(url).hostname or ""):
        return REMOTE_DEFAULT
    return max(1, min(REMOTE_DEFAULT, usable_cpus()))


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def on_this_machine(host: str) -> bool:
    """Whether ``host`` (a name or an address) is this machine: a loopback address, or this
    host's name or one of its addresses. A name that does not resolve counts as another machine."""
    host = host.strip("[]").lower()
    if not host:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    own_name = socket.gethostname().lower()  # not getfqdn(): a reverse lookup can hang without DNS
    if host == own_name:
        return True
    addresses = _addresses(host)
    if any(ipaddress.ip_address(a).is_loopback for a in addresses):
        return True
    return bool(addresses & _addresses(own_name))


def _addresses(host: str) -> set[str]:
    """The addresses ``host`` resolves to (no scope ids); none when it does not resolve."""
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return set()
    return {info[4][0].split("%")[0] for info in infos}
