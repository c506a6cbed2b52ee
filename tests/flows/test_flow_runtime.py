"""The runtime: backout and redelivery, the backout threshold, the failure terminal and the
backout queue, additional instances and ordering by user id (flows-http.md items 3-4;
seed 000 l.443, l.508, l.2821-2828; seed 003 l.4665-4716). Real asyncio, real flows; the
ports collect what would be put and published."""

from __future__ import annotations

import asyncio
import random

from relaymq.flows import CollectingPorts, RunResult, build_flow, run_messages
from relaymq.flows.runtime import Delivery, FlowRuntime
from relaymq.message.headers import MQMessage
from relaymq.message.message import Message

#: Fails while a message's BackoutCount is below the number in its body.
FLAKY = ("def main(c):\n"
         "    if c.input.mq.md.BackoutCount < int(c.input.mq.body):\n"
         "        raise RuntimeError('not yet')\n"
         "    return c.copy_input()\n")


def flaky_flow(threshold: int, failure: bool, backout_queue: str = "") -> object:
    nodes = {"In": {"type": "MQInput", "queue": "IN"}, "C": {"type": "Compute", "code": FLAKY},
             "Out": {"type": "MQOutput", "queue": "OUT"}, "Failed": {"type": "MQOutput", "queue": "FAILED"}}
    connections = ["In.out -> C", "C.out -> Out"] + (["In.failure -> Failed"] if failure else [])
    return build_flow({"flow": "flaky", "backout_threshold": threshold, "backout_queue": backout_queue,
                       "nodes": nodes, "connections": connections})


def run_one(flow, body: bytes) -> tuple[str, RunResult, Message]:
    """One message through the runtime's failure handling (relaymq.flows.run_messages)."""
    message = Message(MQMessage(body=body))
    (result,) = run_messages(flow, [message], "In")
    assert result.message is message
    return result.outcome, result, message


def test_a_failing_message_is_redelivered_until_it_succeeds():
    """flows-http.md item 4: a message that fails is backed out and redelivered (BackoutCount
    counts the runs); outputs of failed runs are never seen."""
    outcome, ports, message = run_one(flaky_flow(threshold=5, failure=True), b"2")
    assert outcome == "ok"
    assert message.mq.md.BackoutCount == 2
    assert [q for q, _ in ports.puts] == ["OUT"]


def test_past_the_threshold_the_failure_terminal_takes_it():
    """flows-http.md item 4; seed 000 l.2821-2828: at the backout threshold the message goes
    to the failure path instead of being retried again."""
    outcome, ports, message = run_one(flaky_flow(threshold=3, failure=True), b"99")
    assert outcome == "failure"
    assert message.mq.md.BackoutCount == 3
    assert [q for q, _ in ports.puts] == ["FAILED"]


def test_without_a_failure_path_it_goes_to_the_backout_queue():
    """formats-and-jms.md item 13: past the threshold the message goes to the backout
    destination (the flow's backout_queue, else the dead-letter queue) and leaves the source."""
    outcome, ports, _ = run_one(flaky_flow(threshold=2, failure=False, backout_queue="BO.Q"), b"99")
    assert (outcome, [q for q, _ in ports.puts]) == ("backout", ["BO.Q"])
    outcome, ports, _ = run_one(flaky_flow(threshold=1, failure=False), b"99")
    assert (outcome, [q for q, _ in ports.puts]) == ("backout", ["SYSTEM.DEAD.LETTER.QUEUE"])


def test_run_messages_keeps_each_messages_outputs_and_outcome_apart():
    """flows-http.md item 4 outside the broker (the Spark pipeline's path, issue 7 "Flows on
    Spark ... the same node code"): several messages through one call; each result has its
    own run's outputs, its outcome and why it failed; node code ran on one worker thread of
    the flow's execution group, never on the calling thread."""
    import threading

    threads: list[str] = []
    flow = flaky_flow(threshold=3, failure=True)
    flow.nodes["C"].evaluate = _recording(flow.nodes["C"].evaluate, threads)
    messages = [Message(MQMessage(body=b)) for b in (b"0", b"99", b"1")]
    results = run_messages(flow, messages)
    assert [r.outcome for r in results] == ["ok", "failure", "ok"]
    assert [[(q, m.mq.body) for q, m in r.puts] for r in results] == [
        [("OUT", b"0")], [("FAILED", b"99")], [("OUT", b"1")]]
    assert [m.mq.md.BackoutCount for m in messages] == [0, 3, 1]
    assert results[0].error is None and "not yet" in results[1].error.text
    assert set(threads) and threading.current_thread().name not in threads
    assert all(name.startswith("relaymq-flows-") for name in threads)


def _recording(evaluate, threads: list[str]):
    import threading

    def wrapped(*args, **kwargs):
        threads.append(threading.current_thread().name)
        return evaluate(*args, **kwargs)
    return wrapped


def test_a_runtime_runs_node_code_only_once_started():
    """The broker's runtime (FlowRuntime) runs node code on its execution group's threads,
    which exist once it is started: run() before start() is a clear error, not a thread pool
    made on the side (outside the broker, run_messages is the way)."""
    async def go():
        runtime = FlowRuntime(flaky_flow(threshold=1, failure=False), CollectingPorts())
        try:
            await runtime.run(Delivery("In", Message(MQMessage(body=b"0"))))
        except RuntimeError as err:
            return str(err)
        return None
    assert "has no flow running" in (asyncio.run(go()) or "")


class RecordingPorts(CollectingPorts):
    """Puts that take a random while on the event loop (seeded by the message body), so
    concurrent workers interleave and finish in any order."""

    def __init__(self) -> None:
        super().__init__()
        self.active = 0
        self.peak = 0

    async def put(self, queue, message, qmgr):  # type: ignore[override]
        self.active += 1
        self.peak = max(self.peak, self.active)
        await asyncio.sleep(random.Random(message.mq.body).uniform(0, 0.004))
        self.active -= 1
        super().put(queue, message, qmgr)


#: A Compute that takes a random while (seeded by the body) on its worker thread.
RANDOM_DELAY = ("import random, time\n"
                "def main(c):\n"
                "    time.sleep(random.Random(c.input.mq.body).uniform(0, 0.01))\n"
                "    return c.copy_input()\n")


def run_many(order_mode: str, instances: int, messages: list[tuple[str, bytes]]) -> RecordingPorts:
    flow = build_flow({"flow": "many", "additional_instances": instances - 1, "order_mode": order_mode,
                       "nodes": {"In": {"type": "MQInput", "queue": "IN"}, "C": {"type": "Compute", "code": RANDOM_DELAY},
                                 "Out": {"type": "MQOutput", "queue": "OUT"}},
                       "connections": ["In.out -> C", "C.out -> Out"]})

    async def go():
        ports = RecordingPorts()
        runtime = FlowRuntime(flow, ports)
        runtime.start()
        for user, body in messages:
            message = Message(MQMessage(body=body))
            message.mq.md.UserIdentifier = user
            await runtime.submit(Delivery("In", message))
        await runtime.drain()
        return ports
    return asyncio.run(go())


USERS = ["alice", "bob", "carol", "dave"]
MESSAGES = [(USERS[i % 4], f"{USERS[i % 4]}:{i}".encode()) for i in range(80)]


def sequence(ports: RecordingPorts, user: str | None = None) -> list[int]:
    return [int(m.mq.body.split(b":")[1]) for _, m in ports.puts
            if user is None or m.mq.md.UserIdentifier.strip() == user]


def test_additional_instances_run_concurrently_and_lose_nothing():
    """flows-http.md item 3; seed 000 l.508: additional instances service one flow."""
    ports = run_many("default", 4, MESSAGES)
    assert sorted(sequence(ports)) == list(range(80))
    assert ports.peak > 1  # more than one instance was at work at once


def test_default_order_mode_lets_instances_reorder():
    """flows-http.md item 3: without order by user id, four instances with random delays
    finish - and put - out of order, even within one user's messages (which is why
    order_mode user_id exists)."""
    ports = run_many("default", 4, MESSAGES)
    assert sequence(ports) != list(range(80))
    assert any(sequence(ports, user) != sorted(sequence(ports, user)) for user in USERS)


def test_order_by_user_id_keeps_each_users_order():
    """flows-http.md item 3; seed 003 l.4665-4716: with order by user id and the same random
    delays, each UserIdentifier's messages leave in the order they came, while the users
    still run concurrently (the overall order is mixed). A user goes to a worker by the CRC-32
    of its id: alice and carol to one of the four, bob and dave to another, at every run (with
    hash(), randomised per process, all four landed on one worker in 1 run of 64 and the
    puts never overlapped)."""
    ports = run_many("user_id", 4, MESSAGES)
    assert sorted(sequence(ports)) == list(range(80))
    for user in USERS:
        assert sequence(ports, user) == sorted(sequence(ports, user)) and len(sequence(ports, user)) == 20
    assert ports.peak > 1
