"""Shared fixtures: real broker processes on real sockets.

``RELAYMQ_TEST_BROKER=relaymq|mosquitto`` picks the broker for the whole run (relaymq by
default); Mosquitto is the reference the suites are validated against. Tests that need a broker
take ``broker`` (a fresh one per test) or ``broker_factory`` (several, or non-default options);
both are stopped at teardown and, when the test failed, the tail of the broker log is printed
so a failure report shows what the broker said.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # `import harness` in any layout

from harness import BrokerKind, BrokerProcess, default_kind  # noqa: E402

REPORT_KEY = pytest.StashKey[list[str]]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[REPORT_KEY] = []


def pytest_report_header(config: pytest.Config) -> str:
    return f"broker under test: {default_kind()} (set RELAYMQ_TEST_BROKER to change)"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """bin/test runs the suite on two pytest-xdist workers (``--dist loadgroup``). Each test
    module is one group, so a module's shared fixtures (a broker, a RabbitMQ node, a browser)
    start once, on one worker. The modules that use the Spark session are one group between
    them, so only one worker starts a JVM, and they go first: they are the longest group, and
    started last they would leave the other worker idle at the end."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    spark_modules = {item.path for item in items if "spark" in getattr(item, "fixturenames", ())}
    for item in items:
        group = "spark" if item.path in spark_modules else item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(group))
    items.sort(key=lambda item: item.path not in spark_modules)  # stable: the order within stays


def pytest_sessionfinish(session: pytest.Session) -> None:
    """On an xdist worker: hand the report lines to the controller, which prints them."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output["relaymq_report"] = session.config.stash[REPORT_KEY]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """On the xdist controller: gather a finished worker's report lines."""
    lines = getattr(node, "workeroutput", {}).get("relaymq_report", [])
    node.config.stash[REPORT_KEY].extend(lines)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """Print what tests asked to report (conformance counts, duplicate counts, ...)."""
    lines = config.stash.get(REPORT_KEY, [])
    if lines:
        terminalreporter.section("relaymq test report")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture
def report(request: pytest.FixtureRequest) -> Callable[[str], None]:
    """Add a line to the end-of-run report (and to the test's own captured output)."""
    lines = request.config.stash[REPORT_KEY]

    def add(line: str) -> None:
        text = f"{request.node.nodeid}: {line}"
        lines.append(text)
        print(text)

    return add


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    rep = outcome.get_result()
    setattr(item, f"rep_{rep.when}", rep)


def _failed(request: pytest.FixtureRequest) -> bool:
    rep = getattr(request.node, "rep_call", None)
    return rep is None or rep.failed


@pytest.fixture(scope="session")
def broker_kind() -> BrokerKind:
    """The broker kind for this run (``RELAYMQ_TEST_BROKER``)."""
    return default_kind()


BrokerFactory = Callable[..., BrokerProcess]


@pytest.fixture
def broker_factory(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, broker_kind: BrokerKind
) -> Iterator[BrokerFactory]:
    """Start brokers with options: ``broker_factory(config={...}, store="memory", kind=...)``.

    Each broker gets its own temp work directory (config, data dir, log) and a free port.
    All are stopped at teardown.
    """
    started: list[BrokerProcess] = []

    def start(*, kind: BrokerKind | None = None, **options: Any) -> BrokerProcess:
        kind = kind or broker_kind
        workdir = tmp_path_factory.mktemp(f"broker-{kind}")
        proc = BrokerProcess(kind, workdir=workdir, **options)
        started.append(proc)
        return proc.start()

    yield start
    for proc in started:
        proc.stop()  # first: the broker's last words reach the log when it exits
        if _failed(request):
            print(f"\n{proc!r}\n{proc.describe_log()}")


@pytest.fixture
def broker(broker_factory: BrokerFactory) -> BrokerProcess:
    """A fresh broker of the selected kind with the default test limits."""
    return broker_factory()


@pytest.fixture(scope="module")
def shared_broker(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, broker_kind: BrokerKind
) -> Iterator[BrokerProcess]:
    """One broker for a whole test module, for tests that isolate themselves by topic and
    client id and never restart it (starting a broker per test costs more than the test)."""
    proc = BrokerProcess(broker_kind, workdir=tmp_path_factory.mktemp(f"shared-{broker_kind}"))
    proc.start()
    yield proc
    proc.stop()
    if request.session.testsfailed:
        print(f"\n{proc!r}\n{proc.describe_log()}")
