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

from harness import BrokerKind, BrokerProcess, default_kind  # noqa: E402  (also: an absolute PYTHONPATH)

REPORT_KEY = pytest.StashKey[list[str]]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[REPORT_KEY] = []


def pytest_report_header(config: pytest.Config) -> list[str]:
    from relaymq import native

    return [f"broker under test: {default_kind()} (set RELAYMQ_TEST_BROKER to change)",
            f"relaymq {native.status.describe()}"]


#: The tests that share the one Spark session (tests/pipeline/conftest.py): one scope of the
#: scheduler below, so one worker starts a JVM; and the first, since it runs longest.
SPARK_TESTS = "tests/pipeline/"


def test_scope(nodeid: str) -> str:
    """What the scheduler keeps on one worker: a test module (its shared fixtures, a broker, a
    RabbitMQ node, a browser, start once), or every Spark test."""
    return SPARK_TESTS if nodeid.startswith(SPARK_TESTS) else nodeid.split("::", maxsplit=1)[0]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """bin/test runs the suite on pytest-xdist workers, scheduled by ``test_scope`` in the
    order of collection (bin/test passes ``--no-loadscope-reorder``)."""
    from xdist.scheduler import LoadScopeScheduling

    class ModuleScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return test_scope(nodeid)

    return ModuleScheduling(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The Spark tests first (a stable sort: the order within stays); and none outside
    SPARK_TESTS, which would start a second session on another worker."""
    strays = [item.nodeid for item in items
              if "spark" in getattr(item, "fixturenames", ()) and not item.nodeid.startswith(SPARK_TESTS)]
    if strays:
        raise pytest.UsageError(f"tests that use the Spark session belong under {SPARK_TESTS}: {strays[:3]}")
    items.sort(key=lambda item: not item.nodeid.startswith(SPARK_TESTS))


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
