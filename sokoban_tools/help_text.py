"""Every command's ``--help`` as plain text: one parser class for all of them.

Descriptions and epilogs are taken from module docstrings, which are written in
reST for the code's readers: ``literal``, :func:`name`. A terminal would show that
markup as it is, so :class:`Parser` strips it from whatever help it prints.
"""

from __future__ import annotations

import argparse
import re

_ROLE = re.compile(r":(?:mod|data|class|func|meth|attr|exc|obj|const):`~?\.*([^`]+)`")  # :func:`.x` -> x
_LITERAL = re.compile(r"``(.+?)``", re.S)  # ``x`` -> x
_BLOCK_MARKER = re.compile(r"(\S)::$", re.M)  # "as follows::" -> "as follows:"


def plain_text(text: str) -> str:
    """``text`` without reST's roles, inline literals and literal-block markers."""
    return _BLOCK_MARKER.sub(r"\1:", _LITERAL.sub(r"\1", _ROLE.sub(r"\1", text)))


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose help and usage are plain text; subcommands' parsers inherit it."""

    def format_help(self) -> str:
        return plain_text(super().format_help())

    def format_usage(self) -> str:
        return plain_text(super().format_usage())
