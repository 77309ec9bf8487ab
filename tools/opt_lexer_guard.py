"""A linear-time check of the string literals in IR text, before xDSL lexes it.

xDSL 0.74's lexer matches a string literal with `"(?:[^"...]+|\\...)*"`, a nested
quantifier that backtracks exponentially when the literal is not closed on its line
(or holds a bad escape): a 40-character unterminated string takes hours. The same
pattern with possessive quantifiers accepts exactly the same literals in linear time,
so ember-opt checks every literal first and reports the bad one as xDSL would.

    "C( (%-) -> tensor<4xf32> {        (no closing quote on the line)
"""

import re

from xdsl.utils.exceptions import ParseError
from xdsl.utils.lexer import Input, Span

_STRING = re.compile(r'"(?:[^"\\\n\v\f]++|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*+"')
_OTHER = re.compile(r'[^"/]++|//[^\n]*+|/')


def check_string_literals(text: str, name: str) -> None:
    """Raise a `ParseError` at the first string literal of `text` that does not end
    on its line with valid escapes (comments are skipped, as the lexer skips them)."""
    pos = 0
    while pos < len(text):
        if text[pos] != '"':
            m = _OTHER.match(text, pos)
            assert m is not None  # one of the alternatives matches any character
            pos = m.end()
        elif m := _STRING.match(text, pos):
            pos = m.end()
        else:
            raise ParseError(
                Span(pos, pos + 1, Input(text, name)),
                "string literal not closed on its line, or with an escape other "
                'than \\n \\t \\\\ \\" or two hex digits',
            )
