"""Which field of a deployment document a reader last read, so a value of a type the reader does not expect (Ray's
`num_replicas: "${REPLICAS}"`, compose's `resources: "gpu"`, KServe's `modelFormat` as a string) is reported as bad
input naming that field, not as a traceback (issue 26). Readers validate the fields they know by type; this is the
net under them: check/run.py reads each document through `traced` and turns a TypeError, AttributeError, KeyError,
IndexError or ValueError raised inside a reader into one InputError at `last_field()`.

The wrappers are dict and list subclasses that wrap what is read from them on the way out (lazily: an unread branch
costs nothing), so isinstance checks, iteration and JSON dumping behave as on the plain document."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

_last: ContextVar[tuple | None] = ContextVar("kvplan_last_field", default=None)


def _wrap(value: Any, path: tuple) -> Any:
    if isinstance(value, dict) and not isinstance(value, TracedDict):
        return TracedDict(value, path)
    if isinstance(value, list) and not isinstance(value, TracedList):
        return TracedList(value, path)
    return value


class TracedDict(dict):
    def __init__(self, data: dict, path: tuple):
        super().__init__(data)
        self._path = path

    def __getitem__(self, key):
        _last.set(self._path + (key,))
        return _wrap(super().__getitem__(key), self._path + (key,))

    def get(self, key, default=None):
        _last.set(self._path + (key,))
        return _wrap(super().get(key, default), self._path + (key,))

    def items(self):
        return [(k, _wrap(v, self._path + (k,))) for k, v in super().items()]

    def values(self):
        return [_wrap(v, self._path + (k,)) for k, v in super().items()]

    def __reduce__(self):  # copies and pickles are plain dicts
        return (dict, (dict(self),))


class TracedList(list):
    def __init__(self, data: list, path: tuple):
        super().__init__(data)
        self._path = path

    def __getitem__(self, index):
        if isinstance(index, slice):
            return super().__getitem__(index)
        _last.set(self._path + (index,))
        return _wrap(super().__getitem__(index), self._path + (index,))

    def __iter__(self):
        for i, value in enumerate(super().__iter__()):
            _last.set(self._path + (i,))
            yield _wrap(value, self._path + (i,))

    def __reduce__(self):
        return (list, (list(self),))


def traced(doc: Any) -> Any:
    """`doc` read through the wrappers, with the record of the last field cleared."""
    _last.set(None)
    return _wrap(doc, ())


def last_field(doc: Any = None, err: BaseException | None = None) -> str | None:
    """The last field read, written as `a.b[0].c`, or None. Given the document and the error, only a field whose
    value has the type the error names ("'float' object ...") is named: a reader that copied the document (compose's
    interpolation) read its copy untraced, and the last traced read is then not the culprit."""
    path = _last.get()
    if not path:
        return None
    if doc is not None and err is not None:
        import re

        named = re.search(r"'(\w+)' object", str(err))
        value = doc
        try:
            for part in path:
                value = dict.__getitem__(value, part) if isinstance(value, dict) else list.__getitem__(value, part)
        except (KeyError, IndexError, TypeError):
            return None
        if named is None or type(value).__name__ != named.group(1):
            return None
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out
