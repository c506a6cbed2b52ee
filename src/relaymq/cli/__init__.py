"""The ``relaymq`` command line: one module per sub-command, assembled by ``relaymq.cli.main``.

Why one module per command: each command's flags, help text and behaviour live together,
and a command that is not installed (or not written yet) is simply absent from the parser.
Every command module exposes ``register(subparsers) -> None``, which adds its sub-parser and
sets ``func=run`` with ``run(args) -> int`` returning the process exit status.
"""
