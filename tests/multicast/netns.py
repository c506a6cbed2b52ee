"""A network namespace of the test's own, with multicast on its loopback and packet loss.

Why a namespace: multicast needs a route for 224.0.0.0/4 and loss needs a firewall rule, and
neither may touch the machine the tests run on. Why nftables and not ``tc qdisc netem``: the
kernels the suite runs on need not carry sch_netem ("Specified qdisc kind is unknown"), while
nftables' ``numgen random`` drops a share of packets anywhere nftables runs (docs/pubsub.md).

``Namespace`` creates it (``ip netns add``), sets up ``lo``, and ``enter()`` moves the calling
thread into it (setns(2)), so the broker process, the receivers and the test's own MQTT client
all live there; ``close()`` goes back and deletes it.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import uuid

import pytest

CLONE_NEWNET = 0x40000000


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(command), capture_output=True, text=True, timeout=30, check=False)


class Namespace:
    def __init__(self) -> None:
        if os.geteuid() != 0:
            pytest.skip("network namespaces need root (the multicast tests create one)")
        if shutil.which("ip") is None:
            pytest.skip("iproute2's `ip` is not installed")
        self.name = f"relaymq-mc-{uuid.uuid4().hex[:8]}"
        made = _run("ip", "netns", "add", self.name)
        if made.returncode != 0:
            pytest.skip(f"no network namespace support: ip netns add: {made.stderr.strip()}")
        self._home: int | None = None
        self._libc = ctypes.CDLL(None, use_errno=True)
        for command in (("ip", "link", "set", "lo", "up"), ("ip", "link", "set", "lo", "multicast", "on"),
                        ("ip", "route", "add", "224.0.0.0/4", "dev", "lo")):
            self.check(*command)

    def exec_prefix(self) -> list[str]:
        return ["ip", "netns", "exec", self.name]

    def check(self, *command: str) -> str:
        done = _run(*self.exec_prefix(), *command)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} in {self.name}: {done.stderr.strip()}")
        return done.stdout

    def drop_udp(self, port: int | None, one_in: int) -> None:
        """Drop about one in ``one_in`` UDP datagrams arriving for ``port`` (None: any port)
        with nftables."""
        if shutil.which("nft") is None:
            pytest.skip("nftables (`nft`) is not installed: bin/test installs it (bin/_env.sh)")
        self.check("nft", "add", "table", "inet", "loss")
        self.check("nft", "add", "chain", "inet", "loss", "in", "{ type filter hook input priority 0; }")
        match = ["udp", "dport", str(port)] if port is not None else ["meta", "l4proto", "udp"]
        self.check("nft", "add", "rule", "inet", "loss", "in", *match, "numgen", "random", "mod", str(one_in), "0",
                   "counter", "drop")

    def dropped(self) -> int:
        """Packets the loss rule dropped so far."""
        listing = self.check("nft", "list", "chain", "inet", "loss", "in")
        words = listing.split()
        return int(words[words.index("packets") + 1]) if "packets" in words else 0

    def _setns(self, path: str) -> None:
        fd = os.open(path, os.O_RDONLY)
        try:
            if self._libc.setns(fd, CLONE_NEWNET) != 0:
                error = ctypes.get_errno()
                raise OSError(error, f"setns({path}): {os.strerror(error)}")
        finally:
            os.close(fd)

    def enter(self) -> None:
        self._home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        self._setns(f"/var/run/netns/{self.name}")

    def close(self) -> None:
        if self._home is not None:
            try:
                if self._libc.setns(self._home, CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), "setns back to the test's own namespace failed")
            finally:
                os.close(self._home)
                self._home = None
        _run("ip", "netns", "delete", self.name)
