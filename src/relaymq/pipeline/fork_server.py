"""A local session's warm Python process for its streaming source runners (issue 16).

``python -m relaymq.pipeline.fork_server SOCKET PARENT`` is started by ``fork_client`` as Spark
launches a session's ``pyspark.daemon`` of Python data source planners (PARENT, that process), with the environment and working
directory of that launch. It imports what a streaming source runner imports (pyspark's runner
module with pyarrow and numpy, and relaymq's source), then listens on SOCKET, a Unix socket in
the session's private launcher directory. For each request whose module is one of
``fork_client.SERVED`` and whose fingerprint is its own, it forks: the child takes the client's
stdin, stdout and stderr and its environment, and runs the module as ``python -m`` would; the
server sends the child's exit status back. A client that goes away (Spark ending the process it
started) takes its child with it (SIGKILL). Anything else is refused and the client runs the
module in a fresh interpreter.

The server ends with the session: when PARENT exits (Spark stops the daemon as the session
stops, and the daemon exits when the JVM does) it stops accepting, removes its socket, lets the
running children finish and exits. It holds no state between requests: every child is a copy of
the interpreter as it was after the imports.
"""

from __future__ import annotations

import importlib
import os
import runpy
import selectors
import signal
import socket
import sys
from dataclasses import dataclass

from relaymq.pipeline.fork_client import HEADER, REFUSED, SERVED, STATUS, decode_request, fingerprint

#: Imported before the first fork: the runner module itself, and the data source it unpickles.
WARM = (*SERVED, "relaymq.pipeline.source")
#: How long a client may take to send its request.
REQUEST_TIMEOUT = 10.0


@dataclass
class Request:
    """One launch: the module to run, the client's environment and its stdin, stdout, stderr."""

    module: str
    cwd: bytes
    environ: dict[bytes, bytes]
    fds: list[int]


def receive(connection: socket.socket) -> Request | None:
    """The request on ``connection``, or None when it is not a whole one."""
    connection.settimeout(REQUEST_TIMEOUT)
    try:
        header, fds, _flags, _address = socket.recv_fds(connection, HEADER.size, 3)
        if len(header) != HEADER.size or len(fds) != 3:
            for fd in fds:
                os.close(fd)
            return None
        (length,) = HEADER.unpack(header)
        data = b""
        while len(data) < length:
            more = connection.recv(min(length - len(data), 1 << 16))
            if not more:
                break
            data += more
    except OSError:
        return None
    if len(data) != length:
        for fd in fds:
            os.close(fd)
        return None
    module, cwd, environ = decode_request(data)
    return Request(module, cwd, environ, fds)


class Server:
    """The accept loop; :meth:`serve` returns only in a forked child, with its request."""

    def __init__(self, path: str, parent: int) -> None:
        self.path = path
        self.own = fingerprint(sys.executable, os.fsencode(os.getcwd()), dict(os.environb))
        self.selector = selectors.DefaultSelector()
        self.parent = os.pidfd_open(parent)
        self.listener: socket.socket | None = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.children: dict[int, tuple[int, socket.socket]] = {}  # pid -> (pidfd, client)
        self.selector.register(self.parent, selectors.EVENT_READ, "parent")
        if os.getppid() != parent:  # the daemon went before we watched it
            self.stop_accepting()
            return
        self.listener.bind(path + ".new")
        self.listener.listen(16)
        os.rename(path + ".new", path)  # clients see a socket that is listening or none
        self.selector.register(self.listener, selectors.EVENT_READ, "accept")

    def stop_accepting(self) -> None:
        if self.listener is None:
            return
        for name in (self.path, self.path.removesuffix(".sock") + ".started"):
            try:
                os.unlink(name)
            except OSError:
                pass
        self.selector.unregister(self.parent)
        try:
            self.selector.unregister(self.listener)
        except KeyError:
            pass  # the daemon went before the server listened
        self.listener.close()
        self.listener = None

    def serve(self) -> Request | None:
        while self.listener is not None or self.children:
            for key, _events in self.selector.select():
                if key.data == "parent":
                    self.stop_accepting()
                elif key.data == "accept" and self.listener is not None:
                    request = self._accept(self.listener.accept()[0])
                    if request is not None:
                        return request  # the child
                elif key.data[0] == "exited":
                    self._exited(key.data[1])
                else:  # the client went away: so does its child
                    self.selector.unregister(key.fileobj)
                    os.kill(key.data[1], signal.SIGKILL)
        return None

    def _accept(self, connection: socket.socket) -> Request | None:
        request = receive(connection)
        if request is None or request.module not in SERVED or (
                fingerprint(sys.executable, request.cwd, request.environ) != self.own):
            for fd in request.fds if request else ():
                os.close(fd)
            _answer(connection, REFUSED)
            return None
        pid = os.fork()
        if pid == 0:
            self._become_child(connection)
            return request
        for fd in request.fds:
            os.close(fd)
        pidfd = os.pidfd_open(pid)
        self.children[pid] = (pidfd, connection)
        self.selector.register(pidfd, selectors.EVENT_READ, ("exited", pid))
        self.selector.register(connection, selectors.EVENT_READ, ("client", pid))
        return None

    def _exited(self, pid: int) -> None:
        pidfd, connection = self.children.pop(pid)
        status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        self.selector.unregister(pidfd)
        os.close(pidfd)
        if connection in self.selector.get_map():
            self.selector.unregister(connection)
        _answer(connection, status)

    def _become_child(self, connection: socket.socket) -> None:
        """Drop every descriptor of the server's (detached first: a closed socket object's
        number must not be closed again once the module reuses it)."""
        self.selector.close()
        descriptors = [connection.detach(), self.parent]
        if self.listener is not None:
            descriptors.append(self.listener.detach())
        for pidfd, client in self.children.values():
            descriptors += [pidfd, client.detach()]
        for fd in descriptors:
            os.close(fd)


def _answer(connection: socket.socket, status: int) -> None:
    """Send the client its answer (if it is still there) and close the connection."""
    try:
        connection.sendall(STATUS.pack(status))
    except OSError:
        pass
    connection.close()


def run(request: Request) -> None:
    """Run the request's module in this process as ``python -m`` runs it."""
    for target, fd in enumerate(request.fds):
        os.dup2(fd, target)
        os.close(fd)
    os.environb.clear()
    os.environb.update(request.environ)
    sys.argv[:] = ["-m"]
    runpy.run_module(request.module, run_name="__main__", alter_sys=True)


def warm_up() -> None:
    """Import what a runner imports; the served modules themselves are then taken out of
    ``sys.modules`` again, to be run as ``__main__`` as a fresh ``python -m`` runs them."""
    for module in WARM:
        importlib.import_module(module)
    for module in SERVED:
        del sys.modules[module]
        package, _dot, name = module.rpartition(".")
        delattr(sys.modules[package], name)


def main(path: str, parent: int) -> None:
    warm_up()
    request = Server(path, parent).serve()
    if request is not None:
        run(request)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
