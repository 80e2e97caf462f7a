"""Loaded by every Python process of the integration test (PYTHONPATH): refuses and logs any socket connection
or name lookup that is not loopback, so the test can prove the offline pipeline never reaches the network."""

import os
import socket

_LOG = os.environ.get("BIASLAB_NETGUARD_LOG")


def _loopback(address) -> bool:
    if isinstance(address, (str, bytes)):
        return True
    host = str(address[0])
    return host in ("localhost", "::1", "0.0.0.0", "") or host.startswith("127.")


def _record(what) -> None:
    if _LOG:
        with open(_LOG, "a", encoding="utf-8") as fh:
            fh.write(f"{os.getpid()} {what}\n")


if _LOG:
    _connect, _connect_ex, _getaddrinfo = socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo

    def connect(self, address):
        if not _loopback(address):
            _record(address)
            raise OSError(f"network blocked by the biaslab test guard: {address}")
        return _connect(self, address)

    def connect_ex(self, address):
        if not _loopback(address):
            _record(address)
            raise OSError(f"network blocked by the biaslab test guard: {address}")
        return _connect_ex(self, address)

    def getaddrinfo(host, *args, **kwargs):
        if not _loopback((host,)) and host is not None:
            _record(host)
            raise socket.gaierror(f"name lookup blocked by the biaslab test guard: {host}")
        return _getaddrinfo(host, *args, **kwargs)

    socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo = connect, connect_ex, getaddrinfo
