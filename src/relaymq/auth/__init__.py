"""Authentication and authorisation: the password file and the ACL file (no sockets here).

Why a package of its own: the MQTT connection state machine, the pub/sub engine and the
command line all need the same answers ("is this user's password right?", "may this client
publish here?"), and none of them should know how the files are written.
"""

from typing import TYPE_CHECKING

from relaymq.lazy import exports

if TYPE_CHECKING:
    from relaymq.auth.acl import Acl, AclError
    from relaymq.auth.passwords import PasswordFile, PasswordFileError

__getattr__ = exports(__name__, {
    "acl": ("Acl", "AclError",),
    "passwords": ("PasswordFile", "PasswordFileError",),
})

__all__ = ["Acl", "AclError", "PasswordFile", "PasswordFileError"]
