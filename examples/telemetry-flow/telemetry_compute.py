"""The Compute step of the seed's telemetry flow (seed 000 l.479-504; flows-http.md items
11-13), in Python instead of ESQL.

One output message per event element of the batch (the ESQL's WHILE loop; it iterates over
the element children, which is what its ``*[I]`` from 2 means): the MQMD copied from the
input; an MQRFH2 with CodedCharSetId 1208, Format MQSTR and NameValueCCSID 1208; ``psc.Topic``
= the event's ``topic`` attribute; ``usr`` = every attribute of the event plus ``b_time`` = the
batch's ``d_tstamp``; the body is the event's CDATA text as a JMS text message (a Heartbeat
has none: an empty body). Child elements of an event are not copied.
"""

from relaymq.message.mqrfh2 import MQRFH2
from relaymq.message.tree import ATTRIBUTE, ELEMENT, Element


def split_batch(compute):
    """Propagate one publication per event of the telemetry batch in ``compute.input``."""
    events = compute.input.body().child("events")
    if events is None:
        raise ValueError("not a telemetry batch: the root element is not <events>")
    batch_time = next((a.value for a in events.children if a.kind == ATTRIBUTE and a.name == "d_tstamp"), None)
    if batch_time is None:
        raise ValueError("the batch has no d_tstamp attribute")
    for event in events.children:
        if event.kind != ELEMENT:
            continue
        attributes = [a for a in event.children if a.kind == ATTRIBUTE]
        topic = next((a.value for a in attributes if a.name == "topic"), None)
        if not topic:
            raise ValueError(f"event <{event.name}> has no topic attribute")
        rfh2 = MQRFH2(CodedCharSetId=1208, Format="MQSTR", NameValueCCSID=1208)
        mcd = Element("mcd")
        mcd.add("Msd", "jms_text")
        psc = Element("psc")
        psc.add("Topic", topic)
        usr = Element("usr")
        for attribute in attributes:
            usr.add(attribute.name, attribute.value)
        usr.add("b_time", batch_time)
        rfh2.folders.extend([mcd, psc, usr])
        out = compute.new_message()
        out.mq.headers = [rfh2]
        text = event.value.strip() if isinstance(event.value, str) else ""
        out.mq.body = text.encode("utf-8")
        compute.propagate(out)
