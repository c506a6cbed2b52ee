"""psc commands over the REST interface (issue 4 "Done when": commands put over REST): a
text body that starts with <psc> is the command, its response comes back in the body
(docs/pubsub.md). Driven through the real REST handlers (relaymq.qmgr.rest)."""

from __future__ import annotations

from relaymq.http.server import HttpRequest
from relaymq.qmgr.rest import MESSAGE_PATH, RestApi

from stack import CONTROL, STREAM, Stack, run


def request(method: str, queue: str, body: bytes = b"", headers=()) -> HttpRequest:
    return HttpRequest(method, MESSAGE_PATH, headers=[("content-type", "text/plain"), *headers], body=body,
                       path_params={"qmgr": "QM1", "queue": queue}, query={"wait": ["5000"]})


def test_item_33_psc_over_rest(tmp_path):
    """pubsub.md items 26, 28, 33: RegSub and Publish POSTed as text, the pscr read back with
    a DELETE; an MQTT publication then reaches the REST subscriber's queue."""
    async def scenario():
        stack = await Stack(tmp_path).start()
        try:
            rest = RestApi({"qmgr": stack.qm})
            for name in ("REST.REPLY", "REST.SUBS"):
                stack.ensure_queue(name)
            reply_to = [("ibm-mq-md-replyto", "REST.REPLY")]
            regsub = b"<psc><Command>RegSub</Command><Topic>Orders/#</Topic><QName>REST.SUBS</QName></psc>"
            assert (await rest.put(request("POST", CONTROL, regsub, reply_to))).status == 201
            answer = await rest.get(request("DELETE", "REST.REPLY"))
            assert answer.status == 200 and answer.body == b"<pscr><Completion>ok</Completion></pscr>"
            bad = b"<psc><Command>Publish</Command><Topic>Orders/+</Topic></psc>"
            assert (await rest.put(request("POST", STREAM, bad, reply_to))).status == 201
            answer = await rest.get(request("DELETE", "REST.REPLY"))
            assert b"<Reason>3072</Reason>" in answer.body and b"<psc>" in answer.body
            publish = b"<psc><Command>Publish</Command><Topic>Orders/1</Topic></psc>order one"
            assert (await rest.put(request("POST", STREAM, publish, reply_to))).status == 201
            assert (await rest.get(request("DELETE", "REST.REPLY"))).body == b"<pscr><Completion>ok</Completion></pscr>"
            got = await rest.get(request("DELETE", "REST.SUBS"))
            assert got.body == b"order one"
            stack.mqtt("device").publish("Orders/2", b"order two")
            got = await rest.get(request("DELETE", "REST.SUBS"))
            assert got.body == b"order two"
        finally:
            await stack.stop()
    run(scenario())
