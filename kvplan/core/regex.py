"""Regular expressions compiled on their first use. Pure.

A module-level `re.compile` runs when the module is imported, whether or not the command uses it: kvplan check of
one compose file compiled about 25 of kvplan's patterns at start-up, a dozen of them never matched (about 2 ms,
each 0.05-0.5 ms; benchmarks/cold_start.py). `Pattern` stands for one until a method is first asked of it.
"""

from __future__ import annotations

import re
from typing import Any


class Pattern:
    """re.compile(pattern, flags) made on the first attribute asked (search, match, fullmatch, sub, ...); after that
    the compiled pattern's methods are this object's own attributes, so a later call costs what the pattern's
    costs."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._source = (pattern, flags)

    def __getattr__(self, name: str) -> Any:  # called only for a name not set yet
        if name.startswith("_"):
            raise AttributeError(name)
        compiled = re.compile(*self._source)
        for method in ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split"):
            setattr(self, method, getattr(compiled, method))
        self.pattern, self.flags, self.groups = compiled.pattern, compiled.flags, compiled.groups
        return getattr(compiled, name)
