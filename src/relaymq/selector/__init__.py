"""The one expression language of relaymq (README decision 3): JMS 1.1 message selectors,
pub/sub content filters and flow Filter nodes.

    >>> from relaymq.selector import compile_selector
    >>> s = compile_selector("JMSPriority > 4 AND colour = 'blue'")
    >>> s.matches({"JMSPriority": 7, "colour": "blue"})
    True

The grammar is JMS 1.1's plus dotted references into the message tree (``Body.a.b``,
``Root.MQMD.Priority``, ``usr.colour``). Identifiers are looked up through a resolver
callable, so the language knows nothing about how a message is stored.
"""

from typing import TYPE_CHECKING

from relaymq.lazy import exports

if TYPE_CHECKING:
    from relaymq.selector.compiled import Selector, compile_selector
    from relaymq.selector.compose import compose_selector
    from relaymq.selector.errors import FILTER_ERROR_REASON, SelectorError
    from relaymq.selector.values import UntypedText

__getattr__ = exports(__name__, {
    "compiled": ("Selector", "compile_selector",),
    "compose": ("compose_selector",),
    "errors": ("FILTER_ERROR_REASON", "SelectorError",),
    "values": ("UntypedText",),
})

__all__ = [
    "FILTER_ERROR_REASON",
    "Selector",
    "SelectorError",
    "UntypedText",
    "compile_selector",
    "compose_selector",
]
