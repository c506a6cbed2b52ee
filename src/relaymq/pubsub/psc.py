"""The ``psc`` command protocol on the wire: reading a command out of an MQ message and
writing the ``pscr`` response (pubsub.md items 26, 27, 33, 34, 37; seed 003 l.5248-5341,
6767-6929, 7365-7444, 7549-7610).

Why separate from the engine: the engine decides *what* a command does; this module knows
*where* it travels (an MQRFH2 ``psc`` folder, or MQRFH v1 name/value strings) and *how* the
answer is addressed (MQMD rules of item 34). No I/O: messages in, messages out.

A relaymq extension for clients that cannot write an MQRFH2 (the REST interface sends text
bodies): a text (MQSTR) message whose body starts with ``<psc>`` carries the folder in the
body, and any text after ``</psc>`` is the publication's body; its response carries the
``pscr`` (and, on warning/error, the ``psc``) in the body too (docs/pubsub.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from relaymq.message.constants import (
    MQFMT_RF_HEADER_2,
    MQFMT_STRING,
    MQMT_DATAGRAM,
    MQMT_REPLY,
    MQMT_REQUEST,
    MQRO_NAN,
    MQRO_PAN,
)
from relaymq.message.errors import FormatError
from relaymq.message.folders import parse_folder, serialize_folder
from relaymq.message.headers import MQMessage
from relaymq.message.message import Message
from relaymq.message.mqmd import MQMD
from relaymq.message.mqrfh import MQRFH, PSC_TO_RFH, to_psc
from relaymq.message.mqrfh2 import MQRFH2
from relaymq.message.tree import Element
from relaymq.pubsub import reasons as r

PUBLISH = "Publish"
DELETE_PUB = "DeletePub"
REG_SUB = "RegSub"
DEREG_SUB = "DeregSub"
REQ_UPDATE = "ReqUpdate"
COMMANDS = (PUBLISH, DELETE_PUB, REG_SUB, DEREG_SUB, REQ_UPDATE)

#: Commands that belong on SYSTEM.BROKER.CONTROL.QUEUE; the others on a publication input
#: queue (item 27, seed 7134-7162).
CONTROL_COMMANDS = frozenset({REG_SUB, DEREG_SUB, REQ_UPDATE})

#: Parameters that may be repeated (item 27: Topic and the option lists; seed 6547-6549);
#: DeregSub may also repeat Filter (seed 5629-5637).
REPEATABLE = frozenset({"Topic", "RegOpt", "PubOpt", "DelOpt"})
REPEATABLE_IN = {DEREG_SUB: REPEATABLE | {"Filter"}}
#: Options given as lists: repeated elements or one space-separated value (pubsub.md decision).
OPTION_LISTS = frozenset({"RegOpt", "PubOpt", "DelOpt"})
#: Mandatory parameters per command (Topic of DeregSub is checked by the engine: DeregAll).
MANDATORY = {PUBLISH: ("Topic",), DELETE_PUB: ("Topic",), REG_SUB: ("Topic",), REQ_UPDATE: ("Topic",)}
#: The parameters each command may carry (seed 5376-5441, 5538-5827, 5884-6043, 6112-6523,
#: 6583-6745); any other one is 2337 RFH_PARM_ERROR ("you have not specified incorrect
#: parameters", seed 6931-7017). SubPoint is tolerated on Publish and DeletePub: the broker
#: writes it into publications (seed 5902-5914) and a flow's Publication node forwards them.
VALID_PARAMS: dict[str, frozenset[str]] = {
    PUBLISH: frozenset({"Command", "Topic", "SubPoint", "PubOpt", "PubTime", "SeqNum", "QMgrName", "QName"}),
    DELETE_PUB: frozenset({"Command", "Topic", "SubPoint", "DelOpt"}),
    REG_SUB: frozenset({"Command", "Topic", "SubPoint", "Filter", "RegOpt", "QMgrName", "QName", "SubName",
                        "SubIdentity", "SubUserData"}),
    DEREG_SUB: frozenset({"Command", "Topic", "SubPoint", "Filter", "RegOpt", "QMgrName", "QName", "SubName",
                          "SubIdentity", "SubUserData"}),
    REQ_UPDATE: frozenset({"Command", "Topic", "SubPoint", "Filter", "RegOpt", "QMgrName", "QName", "SubName"}),
}
#: MQRFH v1 publishers may also give MQPSRegOpts (publisher registration: Anon, Local,
#: DirectReq; seed 3784-3794), which have no effect here.
VALID_PARAMS_RFH1 = {PUBLISH: VALID_PARAMS[PUBLISH] | {"RegOpt"}}
#: The parameters of an ``mcd`` folder (seed 003 "Message service folders"); others are 2337.
MCD_PARAMS = frozenset({"Msd", "Set", "Type", "Fmt"})
#: Maximum length of SubIdentity (seed 6436-6523).
SUB_IDENTITY_MAX = 64
#: The MQRFH v1 name of the stream; a non-default stream prefixes the topic (item 37).
STREAM_NAME = "MQPSStreamName"
DEFAULT_STREAM = "SYSTEM.BROKER.DEFAULT.STREAM"
STREAM_PREFIX = "$SYS/STREAM/"


@dataclass
class Command:
    """One command as the engine sees it, whatever header carried it."""

    name: str
    params: dict[str, list[str]]
    psc: Element  # the folder as received, echoed on warning/error (item 33)
    md: MQMD
    body: bytes = b""
    usr: Element | None = None
    mcd: Element | None = None
    body_format: str = ""
    rfh1: bool = False
    in_body: bool = False  # the psc came as the text body (the REST extension)

    def one(self, name: str, default: str | None = None) -> str | None:
        values = self.params.get(name)
        return values[0] if values else default

    def options(self, name: str) -> list[str]:
        return self.params.get(name, [])

    @property
    def user_id(self) -> str:
        return self.md.UserIdentifier.strip()


def read_command(message: Message) -> Command | None:
    """The command in ``message``, or None when there is none (an inbound ``pscr`` alone is
    ignored, item 26). Raises PscError for 2336/2338/2339 (items 27 and 36)."""
    mq = message.mq
    found = _find_psc(mq)
    if found is None:
        return None
    psc, v1, body, in_body = found
    rfh1 = v1 is not None
    commands = [str(c.value or "") for c in psc.children if c.name == "Command"]
    name = commands[0] if commands else ""
    params = _params(psc, REPEATABLE_IN.get(name, REPEATABLE))
    rfh2 = mq.first_rfh2()
    usr = _usr_from_rfh1(v1) if v1 is not None else (rfh2.folder("usr") if rfh2 is not None else None)
    last = mq.last_rfh2()
    command = Command(
        name, params, psc, mq.md, body,
        usr=usr,
        mcd=last.folder("mcd") if last is not None else None,
        body_format=mq.body_format, rfh1=rfh1, in_body=in_body,
    )
    if not commands:
        raise r.PscError(r.RFH_PARM_MISSING, "the psc folder has no Command")
    _check_parameters(command)
    return command


def _find_psc(mq: MQMessage) -> tuple[Element, MQRFH | None, bytes, bool] | None:
    """(psc folder, the MQRFH v1 it came from, the publication body, whether it came in the
    body): from the first MQRFH2, else an MQRFH v1, else a ``<psc>`` text body."""
    rfh2 = mq.first_rfh2()
    psc: Element | None = rfh2.folder("psc") if rfh2 is not None else None
    if psc is not None:
        return psc, None, mq.body, False
    v1 = next((h for h in mq.headers if isinstance(h, MQRFH)), None)
    if v1 is not None:
        return _psc_from_rfh1(v1), v1, mq.body, False
    in_body = psc_in_body(mq)
    if in_body is None:
        return None
    return in_body[0], None, in_body[1], True


def _params(psc: Element, repeatable: frozenset[str]) -> dict[str, list[str]]:
    """The psc folder's values by name; a repeated non-repeatable parameter is 2338."""
    params: dict[str, list[str]] = {}
    for child in psc.children:
        value = "" if child.value is None else str(child.value)
        if child.name in params and child.name not in repeatable:
            raise r.PscError(r.RFH_DUPLICATE_PARM, f"{child.name} repeated", **{child.name: value})
        if child.name in OPTION_LISTS:
            params.setdefault(child.name, []).extend(value.split())
        else:
            params.setdefault(child.name, []).append(value)
    return params


def _check_parameters(command: Command) -> None:
    """2336 for an unknown command, 2337 for a parameter (or mcd element) it does not have,
    2339 for a missing mandatory one, 2338 for a second ReqUpdate Topic (items 27, 36)."""
    name, params = command.name, command.params
    if name not in COMMANDS:
        raise r.PscError(r.RFH_COMMAND_ERROR, f"unknown command {name!r}")
    valid = VALID_PARAMS_RFH1.get(name, VALID_PARAMS[name]) if command.rfh1 else VALID_PARAMS[name]
    for param in params:
        if param not in valid:
            raise r.PscError(r.RFH_PARM_ERROR, f"{name} has no parameter {param!r}")
    if command.mcd is not None:
        for child in command.mcd.children:
            if child.name not in MCD_PARAMS:
                raise r.PscError(r.RFH_PARM_ERROR, f"the mcd folder has no element {child.name!r}")
    for mandatory in MANDATORY.get(name, ()):
        if not params.get(mandatory):
            raise r.PscError(r.RFH_PARM_MISSING, f"{name} needs {mandatory}")
    if name == REQ_UPDATE and len(params["Topic"]) > 1:
        raise r.PscError(r.RFH_DUPLICATE_PARM, "ReqUpdate takes exactly one Topic")


_BODY_START = b"<psc>"
_BODY_END = "</psc>"


def psc_in_body(mq: MQMessage) -> tuple[Element, bytes] | None:
    """(psc folder, publication body) of a text message whose body begins with ``<psc>``."""
    if mq.body_format != MQFMT_STRING.strip() or not mq.body.lstrip().startswith(_BODY_START):
        return None
    text = mq.body.decode("utf-8", "replace")
    end = text.find(_BODY_END)
    if end < 0:
        return None
    try:
        folder = parse_folder(text[: end + len(_BODY_END)], field="body")
    except FormatError:
        return None
    return folder, text[end + len(_BODY_END):].encode("utf-8")


def _psc_from_rfh1(v1: MQRFH) -> Element:
    """MQRFH v1 name/values as a psc folder; a non-default stream prefixes each topic with
    ``$SYS/STREAM/<stream>/`` (item 37, seed 3596-3871, 2115-2125)."""
    psc = to_psc(v1)
    stream = v1.get(STREAM_NAME)
    if stream and stream.strip() and stream.strip() != DEFAULT_STREAM:
        for topic in psc.children_named("Topic"):
            topic.value = f"{STREAM_PREFIX}{stream.strip()}/{topic.value}"
    return psc


#: MQ Publish/Subscribe data fields a publication carries through the broker (seed 3806-3812);
#: every other ``MQPS`` name is MQ Publish/Subscribe's own and is not copied (seed 3648-3654).
RFH1_DATA_NAMES = frozenset({"MQPSStringData", "MQPSIntData"})
_RFH1_RESERVED = "MQPS"


def _is_rfh1_data(name: str) -> bool:
    return not name.startswith(_RFH1_RESERVED) or name in RFH1_DATA_NAMES


def _usr_from_rfh1(v1: MQRFH | None) -> Element | None:
    """The application's own name/value pairs of an MQRFH v1 message as its ``usr`` folder
    (the folder for application-defined properties, seed 5167): what MQRFH2 subscribers and
    MQTT 5 clients (as user properties) receive of them. Values are text (pubsub docs)."""
    if v1 is None:
        return None
    pairs = [(n, v) for n, v in v1.name_values if _is_rfh1_data(n)]
    if not pairs:
        return None
    usr = Element("usr")
    for name, value in pairs:
        usr.add(name, value)
    return usr


def rfh1_publication(psc: Element, usr: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The MQRFH v1 name/values of a publication for a subscriber that registered with MQRFH
    (item 37): the psc fields of the mapping table (seed 3623-3645), the topic without its
    ``$SYS/STREAM/<stream>/`` prefix and the stream in MQPSStreamName (seed 2221-2223), then
    the usr folder as name/value pairs (``MQPS`` names other than the data fields are MQ
    Publish/Subscribe's and are not copied)."""
    pairs = []
    stream = None
    for child in psc.children:
        if child.name not in PSC_TO_RFH:
            continue
        value = str(child.value if child.value is not None else "")
        if child.name == "Topic" and value.startswith(STREAM_PREFIX) and "/" in value[len(STREAM_PREFIX):]:
            stream, _, value = value[len(STREAM_PREFIX):].partition("/")
        pairs.append((PSC_TO_RFH[child.name], value))
    if stream is not None:
        pairs.append((STREAM_NAME, stream))
    pairs += [(name, value) for name, value in usr if name and _is_rfh1_data(name)]
    return pairs


def is_response(message: Message) -> bool:
    """True for a broker response (an MQRFH2 ``pscr``, an MQRFH v1 MQPSCompCode, or a
    ``<pscr>`` text body): the broker ignores those as input (item 26)."""
    rfh2 = message.mq.first_rfh2()
    if rfh2 is not None and rfh2.folder("pscr") is not None:
        return True
    if any(isinstance(h, MQRFH) and h.get("MQPSCompCode") is not None for h in message.mq.headers):
        return True
    return message.mq.body.lstrip().startswith(b"<pscr>")


def command_of(message: Message) -> Command | None:
    """Like ``read_command`` but never raises: what a caller needs only to inspect."""
    try:
        return read_command(message)
    except r.PscError:
        return None


# -- responses (items 33 and 34) -------------------------------------------------------------

OK, WARNING, ERROR = "ok", "warning", "error"


@dataclass
class Response:
    """The outcome of one command: completion and the ``<Response>`` folders."""

    completion: str = OK
    responses: list[dict[str, str]] = field(default_factory=list)  # [{"Reason": "3081", "Topic": ...}]
    extra: list[tuple[str, str]] = field(default_factory=list)  # FullResp attributes

    @classmethod
    def error(cls, err: r.PscError) -> Response:
        return cls(ERROR, [{"Reason": str(err.reason), **err.extra}])

    def warn(self, reason: int, **extra: str) -> None:
        self.completion = WARNING
        self.responses.append({"Reason": str(reason), **extra})

    @property
    def reasons(self) -> list[int]:
        return [int(item["Reason"]) for item in self.responses]

    def pscr(self) -> Element:
        folder = Element("pscr")
        folder.add("Completion", self.completion)
        for item in self.responses:
            response = folder.add("Response")
            for key, value in item.items():
                response.add(key, value)
        for key, value in self.extra:
            folder.add(key, value)
        return folder


def response_wanted(md: MQMD, completion: str, in_body: bool = False) -> bool:
    """Item 34 (seed 7365-7444): a REQUEST always gets a response; a DATAGRAM gets one per its
    Report options: PAN on success (ok or warning), NAN on failure, both always. A command in
    the body (the REST extension, which cannot set MsgType or Report) with a ReplyToQ is a
    request."""
    if md.MsgType == MQMT_REQUEST or (in_body and md.ReplyToQ.strip()):
        return True
    if md.MsgType != MQMT_DATAGRAM:
        return False
    if completion == ERROR:
        return bool(md.Report & MQRO_NAN)
    return bool(md.Report & MQRO_PAN)


def response_message(command: Command, response: Response, qmgr_name: str) -> Message:
    """The response's MQ message (item 34, seed 7549-7610): MsgType REPLY, CorrelId = the
    command's MsgId, Priority/Persistence/Expiry copied, PutApplName = first 28 characters of
    the queue manager's name; the original psc follows the pscr on warning/error; the body
    is never echoed (item 33). A command that came in MQRFH v1 is answered in MQRFH v1."""
    md = command.md
    out = MQMD(
        MsgType=MQMT_REPLY,
        CorrelId=md.MsgId,
        Priority=md.Priority,
        Persistence=md.Persistence,
        Expiry=md.Expiry,
        PutApplName=qmgr_name[:28],
        Format=MQFMT_RF_HEADER_2.strip(),
    )
    if command.rfh1:
        pairs = [("MQPSCompCode", {OK: "0", WARNING: "1", ERROR: "2"}[response.completion])]
        pairs += [("MQPSReason", item["Reason"]) for item in response.responses]
        if response.completion != OK:
            pairs += [(PSC_TO_RFH[c.name], str(c.value or "")) for c in command.psc.children if c.name in PSC_TO_RFH]
        out.Format = "MQHRF"
        return Message(MQMessage(md=out, headers=[MQRFH(name_values=pairs)]))
    folders = [response.pscr()]
    if response.completion != OK and command.psc.children:
        folders.append(command.psc.copy())
    if command.in_body:
        out.Format = MQFMT_STRING.strip()
        out.CodedCharSetId = 1208
        return Message(MQMessage(md=out, body="".join(serialize_folder(f) for f in folders).encode("utf-8")))
    return Message(MQMessage(md=out, headers=[MQRFH2(folders=folders)]))


def reply_address(command: Command, qmgr_name: str) -> tuple[str, str] | None:
    """(queue manager, queue) a response goes to: the command's ReplyToQ/ReplyToQMgr."""
    queue = command.md.ReplyToQ.strip()
    if not queue:
        return None
    return (command.md.ReplyToQMgr.strip() or qmgr_name, queue)


# -- building commands (clients, the CLI, tests) ---------------------------------------------

def command_message(command: str, *, msg_type: int = MQMT_REQUEST, reply_to: str = "",
                    reply_to_qmgr: str = "", user_id: str = "", correl_id: bytes | None = None,
                    msg_id: bytes | None = None, report: int = 0, body: bytes = b"",
                    usr: dict[str, str] | None = None, expiry: int = -1, persistence: int = 0,
                    **params: str | list[str]) -> Message:
    """An MQRFH2 command message, as a client application builds one: ``params`` become psc
    elements in order (a list repeats the element)."""
    psc = Element("psc")
    psc.add("Command", command)
    for name, value in params.items():
        for item in (value if isinstance(value, list) else [value]):
            psc.add(name, item)
    folders = [psc]
    if usr:
        folder = Element("usr")
        for key, value in usr.items():
            folder.add(key, value)
        folders.append(folder)
    md = MQMD(MsgType=msg_type, ReplyToQ=reply_to, ReplyToQMgr=reply_to_qmgr, UserIdentifier=user_id,
              Report=report, Expiry=expiry, Persistence=persistence, Format=MQFMT_RF_HEADER_2.strip())
    if correl_id is not None:
        md.CorrelId = correl_id.ljust(24, b"\0")[:24]
    if msg_id is not None:
        md.MsgId = msg_id.ljust(24, b"\0")[:24]
    return Message(MQMessage(md=md, headers=[MQRFH2(Format="MQSTR" if body else "", folders=folders)], body=body))


def reply_reasons(message: Message) -> tuple[str, list[int]]:
    """(completion, reasons) of a response message (MQRFH2 pscr or MQRFH v1): for clients."""
    rfh2 = message.mq.first_rfh2()
    pscr = rfh2.folder("pscr") if rfh2 is not None else None
    if pscr is None and message.mq.body.lstrip().startswith(b"<pscr>"):
        text = message.mq.body.decode("utf-8")
        pscr = parse_folder(text[: text.find("</pscr>") + len("</pscr>")], field="body")
    if pscr is not None:
        reasons = []
        for response in pscr.children:
            if response.name in ("Response", "Reponse"):  # the seed's typo, read leniently
                reasons.append(int(str(response.get("Reason"))))
        return str(pscr.get("Completion")), reasons
    v1 = next((h for h in message.mq.headers if isinstance(h, MQRFH)), None)
    if v1 is None:
        raise ValueError("not a broker response")
    completion = {"0": OK, "1": WARNING, "2": ERROR}[v1.get("MQPSCompCode", "2") or "2"]
    return completion, [int(x) for x in v1.get_all("MQPSReason")]
