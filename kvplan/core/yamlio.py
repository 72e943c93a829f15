"""Reading YAML and JSON input files safely: through the bounded reader (core/files.py), no YAML aliases, one-line errors.

Aliases are refused outright: no spec or deployment file needs them, and refusing them is the
simplest complete defence against alias bombs ("billion laughs"), whose expansion happens later,
in whatever code walks the loaded structure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kvplan.core import files
from kvplan.core.errors import InputError

MAX_FILE_BYTES = 8 * 2**20  # a spec, a config.json or a deployment file is a few KiB; 8 MiB is generous


class _NoAliasLoader(yaml.SafeLoader):
    def compose_node(self, parent, index):  # type: ignore[override]
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise InputError(f"YAML alias *{event.anchor} at line {event.start_mark.line + 1} is not allowed",
                             hint="write the value out in full; aliases are refused to rule out alias bombs")
        return super().compose_node(parent, index)


def read_text(path: Path) -> str:
    # the bounded reader: regular files only, size-capped, never blocking on a FIFO (core/files.py)
    return files.read_text(path, limit=MAX_FILE_BYTES)


def _yaml_error(err: yaml.YAMLError) -> str:
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None) or str(err).splitlines()[0]
    if mark is not None:
        return f"malformed YAML at line {mark.line + 1}, column {mark.column + 1}: {problem}"
    return f"malformed YAML: {problem}"


def load_yaml_documents(path: Path) -> list[Any]:
    """Every document of a YAML file ('---' separated); an empty file is an error."""
    text = read_text(path)
    try:
        docs = [d for d in yaml.load_all(text, Loader=_NoAliasLoader) if d is not None]
    except InputError as err:
        raise err.located(str(path)) from None
    except RecursionError:
        raise InputError("is nested too deeply to read", where=str(path)) from None
    except yaml.YAMLError as err:
        raise InputError(_yaml_error(err), where=str(path), hint="check indentation, brackets and quotes") from None
    except ValueError:  # an integer of more than 4,300 digits: Python's int() refuses to convert it
        raise InputError("holds a number too long to read (more than 4,300 digits)", where=str(path)) from None
    if not docs:
        raise InputError("is empty", where=str(path), hint="expected a YAML mapping")
    return docs


def load_yaml(path: Path) -> Any:
    docs = load_yaml_documents(path)
    if len(docs) > 1:
        raise InputError(f"holds {len(docs)} YAML documents, expected one", where=str(path))
    return docs[0]


def load_json(path: Path) -> Any:
    """JSON as Hugging Face writes it (bare Infinity/NaN), strictly: kvplan.core.jsonio."""
    from kvplan.core.jsonio import load_json as strict

    return strict(path)


def dump_yaml(data: Any) -> str:
    # default_flow_style=None writes a collection of scalars inline; a top-level mapping of scalars only
    # (a dense model read from config.json: no aliases, no layout) would come out as one `{...}` line, so
    # the top level is dumped key by key and stays in block style, one key per line, for people to edit
    def dump(obj: Any, flow: bool | None = None) -> str:
        return yaml.safe_dump(obj, sort_keys=False, default_flow_style=flow, width=100, allow_unicode=True)
    if isinstance(data, dict) and data:
        # a scalar value in block style (`name: x`); a list or mapping as before (`aliases: [a, b]`)
        return "".join(dump({key: value}, None if isinstance(value, (dict, list)) else False)
                       for key, value in data.items())
    return dump(data)
