"""Node type name (as written in a flow definition) -> node class."""

from __future__ import annotations

from relaymq.flows.node import Node
from relaymq.flows.nodes.compute import Compute
from relaymq.flows.nodes.filter import Filter
from relaymq.flows.nodes.http_input import HTTPInput
from relaymq.flows.nodes.http_reply import HTTPReply
from relaymq.flows.nodes.http_request import HTTPRequest
from relaymq.flows.nodes.jms_input import JMSInput
from relaymq.flows.nodes.jms_mq_transform import JMSMQTransform
from relaymq.flows.nodes.jms_output import JMSOutput
from relaymq.flows.nodes.jms_reply import JMSReply
from relaymq.flows.nodes.label import Label
from relaymq.flows.nodes.mq_input import MQInput
from relaymq.flows.nodes.mq_jms_transform import MQJMSTransform
from relaymq.flows.nodes.mq_output import MQOutput
from relaymq.flows.nodes.mq_reply import MQReply
from relaymq.flows.nodes.publication import Publication
from relaymq.flows.nodes.reset_content_descriptor import ResetContentDescriptor
from relaymq.flows.nodes.route import Route
from relaymq.flows.nodes.route_to_label import RouteToLabel
from relaymq.flows.nodes.scada_input import SCADAInput
from relaymq.flows.nodes.throw import Throw
from relaymq.flows.nodes.trace import Trace
from relaymq.flows.nodes.try_catch import TryCatch

NODE_TYPES: dict[str, type[Node]] = {cls.KIND: cls for cls in (
    MQInput, SCADAInput, HTTPInput, Compute, Filter, Route, Label, RouteToLabel, JMSMQTransform,
    MQJMSTransform, Trace, Throw, TryCatch, ResetContentDescriptor, Publication, MQOutput, MQReply,
    HTTPReply, HTTPRequest, JMSInput, JMSOutput, JMSReply)}
