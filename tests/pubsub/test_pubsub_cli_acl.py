"""``relaymq acl show|set|remove|group`` (pubsub.md item 38; docs/pubsub.md): rows persist in
the ACL file and a running service takes them in."""

from __future__ import annotations

import json

from relaymq.cli.main import main
from relaymq.pubsub import reasons as r

from stack import Stack, run


def acl(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["acl", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_item_38_acl_set_show_remove(tmp_path, capsys):
    """pubsub.md item 38; seed 003 l.1288-1332: set a row, see the effective permission,
    remove it; the file holds only the rows set through the command."""
    data = ["--data-dir", str(tmp_path)]
    assert acl(capsys, "set", "", "PublicGroup", "--publish", "deny", *data)[0] == 0
    assert acl(capsys, "group", "Writers", "alice", *data)[0] == 0
    assert acl(capsys, "set", "News", "Writers", "--publish", "allow", *data)[0] == 0
    code, out, _ = acl(capsys, "show", "--user", "alice", "--topic", "News/Today", *data)
    assert code == 0 and json.loads(out)["publish"] is True
    code, out, _ = acl(capsys, "show", "--user", "bob", "--topic", "News/Today", *data)
    assert json.loads(out)["publish"] is False
    saved = json.loads((tmp_path / "topic-acl.json").read_text())
    assert saved["groups"] == {"Writers": ["alice"]}
    assert {(row["topic"], row["principal"]) for row in saved["acl"]} == {("", "PublicGroup"), ("News", "Writers")}
    assert acl(capsys, "remove", "News", "Writers", *data)[0] == 0
    code, _, err = acl(capsys, "remove", "News", "Writers", *data)
    assert code == 1 and err.count("\n") == 1


def test_item_38_running_service_reloads_acl_file(tmp_path, capsys):
    """pubsub.md item 38: a row set with the command holds in a running broker."""
    async def scenario():
        stack = await Stack(tmp_path, {"topic_security": True}).start()
        try:
            assert await stack.command("Publish", Topic="Locked/x", body=b"1") == ("ok", [])
            assert acl(capsys, "set", "Locked", "PublicGroup", "--publish", "deny", "--data-dir", str(tmp_path))[0] == 0
            assert stack.service.reload_acl()
            assert await stack.command("Publish", Topic="Locked/x", body=b"1") == ("error", [r.NOT_AUTHORIZED])
        finally:
            await stack.stop()
    run(scenario())
