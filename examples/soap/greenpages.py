"""The Compute step of the SOAP example (seed 000 l.2053-2114; flows-http.md item 9): answer
a GreenPages ``getUserName`` request with the user's record, as the seed's web service does.

The request arrives parsed in the XMLNSC domain; the answer is the SOAP response envelope as
text. An unknown name gets a SOAP Fault with HTTP status 500 (set through the
``HTTPReplyHeader`` folder, which HTTPReply reads).
"""

from xml.sax.saxutils import escape

from relaymq.message.tree import Element

#: The directory the example serves (the seed's sample record).
DIRECTORY = {"bloggs, joe": ("Joseph Bloggs", 65874, "(718)545-3623")}

ENVELOPE = """<?xml version='1.0' encoding='UTF-8'?>
<SOAP-ENV:Envelope xmlns:SOAP-ENV="http://schema.xmlsoap.org/soap/envelope/"
                    xmlns:xsi="http://www.w3/2001/XMLSchema-instance"
                    xmlns:xsd="http://www.w3/2001/XMLSchema">
  <SOAP-ENV:Body>
{body}
  </SOAP-ENV:Body>
</SOAP-ENV:Envelope>
"""

RESPONSE = """    <ns1:getUserNameResponse xmlns:ns1="http://tempuri.org/imb.GreenPages"
                            SOAP-ENV:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/">
      <return xmlns:ns2="http://www.greenpages.com/schemas/GreenPagesRemoteInterface"
              xsi:type="ns2:imb.UserRecord">
        <fullName xsi:type="xsd:string">{full_name}</fullName>
        <empNum xsi:type="xsd:int">{emp_num}</empNum>
        <deskPhone xsi:type="xsd:string">{desk_phone}</deskPhone>
      </return>
    </ns1:getUserNameResponse>"""

FAULT = """    <SOAP-ENV:Fault>
      <faultcode>SOAP-ENV:Client</faultcode>
      <faultstring>{reason}</faultstring>
    </SOAP-ENV:Fault>"""


def get_user_name(compute):
    """Build the SOAP response (or fault) for the request in ``compute.input``."""
    out = compute.new_message(domain="BLOB")
    name = compute.input.body().get("Envelope.Body.getUserName.nameField")
    record = DIRECTORY.get(name.strip().lower()) if isinstance(name, str) else None
    if record is None:
        reason = f"no user called {name!r}" if name else "the request has no getUserName/nameField"
        body = FAULT.format(reason=escape(reason))
        header = Element("HTTPReplyHeader")
        header.add("X-Original-HTTP-Status-Code", 500)
        out.transport.append(header)
    else:
        full_name, emp_num, desk_phone = record
        body = RESPONSE.format(full_name=escape(full_name), emp_num=emp_num, desk_phone=escape(desk_phone))
    out.mq.body = ENVELOPE.format(body=body).encode("utf-8")
    return out
