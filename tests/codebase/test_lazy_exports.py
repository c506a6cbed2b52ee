"""The packages whose public names are imported on first use (relaymq.lazy; issue 16, a
smaller base process): every name they list in ``__all__`` is one they can hand out, and
importing a module of theirs does not import the rest of the package."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

LAZY_PACKAGES = ("relaymq.message", "relaymq.message.domains", "relaymq.flows", "relaymq.selector",
                 "relaymq.pubsub", "relaymq.auth")


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_every_public_name_resolves(package):
    module = importlib.import_module(package)
    for name in module.__all__:
        assert getattr(module, name) is not None, name
    with pytest.raises(AttributeError):
        module.no_such_name  # noqa: B018 - the attribute access is the test


def test_a_module_does_not_import_its_package():
    """``relaymq.message.message`` alone does not bring the JMS mappings, the message domains
    or the selector language, which ``relaymq serve`` does not need to start."""
    code = ("import sys, relaymq.message.message, relaymq.flows.settings; "
            "print(sorted(m for m in sys.modules if m.startswith(('relaymq.message.domains', "
            "'relaymq.message.jms_mq', 'relaymq.selector', 'relaymq.flows.definition'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out
