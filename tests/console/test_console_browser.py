"""The web console at /console in a real browser (issue 18 "What to build", third and fourth
items): log in, see a client connect, browse a queue, put and get, deploy a flow and watch its
counter move, undeploy it, disconnect a client, and the other pages (sessions, subscriptions,
retained, listeners, psc, archive) with the broker's real data. Screenshots of the main pages
are written to $RELAYMQ_CONSOLE_SCREENSHOTS when set (docs/images/, docs/console.md)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from harness import BrokerProcess
from interop.clients import PahoClient, unique
from operator_http import call

CONFIG = {"qmgr": {"queue": [{"name": "CONSOLE.IN"}, {"name": "CONSOLE.OUT"}, {"name": "CONSOLE.REPLY"}]},
          "archive": {"rule": [{"name": "console", "topics": ["console/#"], "partitions": 1}]}}
FLOW = """flow: relay
nodes:
  In: {type: MQInput, queue: CONSOLE.IN}
  Out: {type: MQOutput, queue: CONSOLE.OUT}
connections:
  - In.out -> Out
"""


def shot(page: Any, name: str) -> None:
    directory = os.environ.get("RELAYMQ_CONSOLE_SCREENSHOTS")
    if directory:
        page.screenshot(path=str(Path(directory) / f"console-{name}.png"), full_page=True)


def log_in(page: Any, broker: BrokerProcess) -> None:
    user, password = broker.admin_credentials.read_text().strip().split(":", 1)
    page.goto(f"http://{broker.host}:{broker.http_port}/console")
    page.fill("#login-user", user)
    page.fill("#login-password", password)
    page.click("#login button[type=submit]")
    expect(page.get_by_test_id("card-clients")).to_be_visible()


@pytest.fixture
def console_broker(broker_factory) -> BrokerProcess:
    return broker_factory(config=CONFIG)


def row(page: Any, testid: str, key: str) -> Any:
    return page.get_by_test_id(testid).locator(f'tr[data-key="{key}"]')


def cell(page: Any, testid: str, key: str, column: str) -> Any:
    return row(page, testid, key).locator(f'td[data-col="{column}"]')


def test_login_refuses_wrong_credentials(console_broker: BrokerProcess, page: Any) -> None:
    """Issue 18: the console has the admin API's authentication: a wrong password is refused
    in the page, and no page opens."""
    page.goto(f"http://{console_broker.host}:{console_broker.http_port}/console")
    page.fill("#login-user", "admin")
    page.fill("#login-password", "not-the-password")
    page.click("#login button[type=submit]")
    expect(page.locator("#login-error")).to_have_text("wrong user or password")
    expect(page.locator("#nav")).to_be_hidden()


def test_console_in_a_browser(console_broker: BrokerProcess, page: Any) -> None:
    """Issue 18 "Tested in a real browser": log in, see a client connect, browse a queue,
    deploy a flow, watch a counter move."""
    broker = console_broker
    log_in(page, broker)
    expect(page.get_by_test_id("card-clients").locator(".value")).to_have_text("0")
    # a client connects: the overview's count and the clients page show it
    tag = unique("web")
    client = PahoClient(broker, "v5", f"{tag}-dev", clean=False)
    client.client.reconnect_delay_set(60, 60)
    client.connect()
    client.subscribe("console/#", 1)
    expect(page.get_by_test_id("card-clients").locator(".value")).to_have_text("1")
    for n in range(20):
        client.publish(f"console/t{n % 3}", f"reading {n}".encode(), 1, retain=n >= 17)
    expect(page.get_by_test_id("card-messages-in").locator(".value")).to_have_text("20")
    expect(page.get_by_test_id("rate-chart").locator("polyline[data-series=in]")).to_have_count(1)
    shot(page, "overview")
    page.click("#nav a[href='#/clients']")
    expect(cell(page, "clients-table", f"{tag}-dev", "protocolLevel")).to_have_text("5")
    expect(cell(page, "clients-table", f"{tag}-dev", "messagesReceived")).to_have_text("20")
    shot(page, "clients")

    page.click("#nav a[href='#/subscriptions']")
    expect(row(page, "subscriptions-table", f"{tag}-dev console/#")).to_be_visible()
    page.click("#nav a[href='#/retained']")
    expect(cell(page, "retained-table", "console/t2", "size")).to_have_text(str(len(b"reading 17")))
    shot(page, "retained")
    page.click("#nav a[href='#/archive']")
    expect(cell(page, "archive-table", "console-0", "entries")).to_have_text("20")
    page.click("#nav a[href='#/listeners']")
    expect(cell(page, "listeners-table", "default", "connections")).to_have_text("1")

    # a queue: put from the console, browse it, see its depth and its message list
    page.click("#nav a[href='#/queues']")
    page.get_by_test_id("queues-table").get_by_role("link", name="CONSOLE.OUT", exact=True).click()
    expect(page.get_by_test_id("queue-depth")).to_have_text("0")
    page.get_by_test_id("put-body").fill("hello from the console")
    page.get_by_test_id("put").click()
    expect(page.get_by_test_id("queue-depth")).to_have_text("1")
    expect(page.get_by_test_id("messages-table").locator("tbody tr[data-key]")).to_have_count(1)
    page.get_by_test_id("browse").click()
    expect(page.get_by_test_id("message-body")).to_have_text("hello from the console")
    expect(page.get_by_test_id("queue-depth")).to_have_text("1")  # browsing leaves it there
    shot(page, "queue")
    page.get_by_test_id("get").click()
    expect(page.get_by_test_id("message-body")).to_have_text("hello from the console")
    expect(page.get_by_test_id("queue-depth")).to_have_text("0")

    # a flow: deploy it, feed its input queue, watch its counter move, undeploy it
    page.click("#nav a[href='#/flows']")
    page.get_by_test_id("flow-definition").fill(FLOW)
    page.get_by_test_id("deploy").click()
    expect(page.get_by_test_id("deploy-result")).to_have_text("deployed relay in default")
    expect(cell(page, "flows-table", "relay", "completed")).to_have_text("0")
    for n in range(3):
        status, _, _ = call(broker, "POST", "/ibmmq/rest/v3/messaging/qmgr/QM1/queue/CONSOLE.IN/message",
                            f"job {n}".encode(), headers={"Content-Type": "text/plain"})
        assert status == 201
    expect(cell(page, "flows-table", "relay", "completed")).to_have_text("3")
    expect(cell(page, "flows-table", "relay", "received")).to_have_text("3")
    shot(page, "flows")
    page.click("#nav a[href='#/queues']")
    expect(page.get_by_test_id("queues-table").locator('tr[data-key="CONSOLE.OUT"] td[data-col="depth"]')).to_have_text("3")
    shot(page, "queues")
    page.click("#nav a[href='#/flows']")
    row(page, "flows-table", "relay").get_by_role("button", name="Undeploy").click()
    expect(row(page, "flows-table", "relay")).to_have_count(0)

    # sessions; then disconnect the client from the clients page
    page.click("#nav a[href='#/sessions']")
    expect(cell(page, "sessions-table", f"{tag}-dev", "subscriptions")).to_have_text("1")
    shot(page, "sessions")
    page.click("#nav a[href='#/clients']")
    row(page, "clients-table", f"{tag}-dev").get_by_role("button", name="Disconnect").click()
    assert client.disconnected.wait(10) and client.disconnect_reason == "Administrative action"
    expect(row(page, "clients-table", f"{tag}-dev")).to_have_count(0)
    page.click("#nav a[href='#/sessions']")
    expect(row(page, "sessions-table", f"{tag}-dev").locator("span.state-down")).to_have_text("offline")
    client.client.loop_stop()


def test_psc_page_lists_queue_subscriptions(console_broker: BrokerProcess, page: Any) -> None:
    """Issue 18: the psc subscriptions page shows what the pub/sub engine holds (a RegSub
    command put over REST on the control queue, seed 003)."""
    broker = console_broker
    command = b"<psc><Command>RegSub</Command><Topic>console/psc</Topic><QName>CONSOLE.OUT</QName></psc>"
    status, _, _ = call(broker, "POST", "/ibmmq/rest/v3/messaging/qmgr/QM1/queue/SYSTEM.BROKER.CONTROL.QUEUE/message",
                        command, headers={"Content-Type": "text/plain", "ibm-mq-md-replyTo": "CONSOLE.REPLY"})
    assert status == 201
    log_in(page, broker)
    page.click("#nav a[href='#/psc']")
    expect(page.get_by_test_id("psc-table").locator("td", has_text=re.compile(r"^console/psc$"))).to_be_visible()
    shot(page, "psc")
