"""Reading YAML and JSON input files safely: through the bounded reader (core/files.py), one-line errors, YAML as
the engines read it (aliases and merge keys accepted, alias bombs refused).

YAML is read the way the tools that consume deployment files read it (PyYAML's safe loader, which vLLM,
SGLang and TensorRT-LLM use; docker compose and kubectl accept the same documents):
- anchors, aliases and `<<:` merge keys are accepted: compose files share blocks with `x-common: &default`;
- several `---` documents per file are separate documents (Kubernetes manifests);
- `${VAR}` is plain text here; the format readers (kvplan/check/readers/) expand it by their format's rules.

Two things are refused (exit 2), each with its line:
- an alias "bomb": aliases may repeat a subtree, and a few nested ones multiply (the "billion laughs"). The
  composed node graph is measured before anything is built: the tree the aliases expand to may hold at most
  ALIAS_EXPANSION times the file's own nodes (and at least MIN_EXPANDED_NODES); a recursive alias is refused;
- a key given twice in one mapping with two different values. vLLM's yaml.safe_load keeps the last value
  silently; docker compose (go-yaml v3: "mapping key already defined") and kubectl's strict field validation
  refuse the file. A file that two of its readers understand differently has no single meaning to judge, so
  kvplan refuses it and names the key. The same value given twice has one meaning (Python's loader, as the engines
  use it, keeps it): accepted. Keys a `<<:` merge brings in may be overridden: that is what merge keys are for.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kvplan.core import files
from kvplan.core.errors import InputError
from kvplan.core.jsonio import load_json as strict, loads

MAX_FILE_BYTES = 8 * 2**20  # a spec, a config.json or a deployment file is a few KiB; 8 MiB is generous
ALIAS_EXPANSION = 10  # the expanded tree may be this many times the file's own nodes ...
MIN_EXPANDED_NODES = 100_000  # ... or this many nodes, whichever is more

_MERGE_TAG = "tag:yaml.org,2002:merge"
_STR_TAG = "tag:yaml.org,2002:str"
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the C parser composes; construction is PyYAML's


def read_text(path: Path) -> str:
    # the bounded reader: regular files only, size-capped, never blocking on a FIFO (core/files.py)
    return files.read_text(path, limit=MAX_FILE_BYTES)


def _yaml_error(err: yaml.YAMLError) -> str:
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None) or str(err).splitlines()[0]
    if mark is not None:
        return f"malformed YAML at line {mark.line + 1}, column {mark.column + 1}: {problem}"
    return f"malformed YAML: {problem}"


def _line(node: yaml.Node) -> int:
    return node.start_mark.line + 1


def _check_node_graph(root: yaml.Node) -> None:
    """Refuse recursive aliases, alias bombs and repeated keys, before anything is constructed.

    Aliases compose to shared node objects, so the graph is as small as the file; `expanded` counts the tree
    they stand for (memoised per node, so a bomb is measured without being expanded)."""
    keys = yaml.constructor.SafeConstructor()
    own: set[int] = set()
    expanded: dict[int, int] = {}
    on_path: set[int] = set()  # the nodes from the root to the one being walked
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        ident = id(node)
        if done:
            on_path.discard(ident)
            expanded[ident] = 1 + sum(expanded[id(child)] for child in _children(node))
            continue
        if ident in expanded:
            continue
        own.add(ident)
        on_path.add(ident)
        if isinstance(node, yaml.MappingNode):
            _check_keys(node, keys)
        stack.append((node, True))
        for child in _children(node):
            if id(child) in on_path:
                raise InputError(f"YAML alias at line {_line(child)} refers to a node that contains it",
                                 hint="a recursive alias has no finite value")
            if id(child) not in expanded:
                stack.append((child, False))
    limit = max(MIN_EXPANDED_NODES, ALIAS_EXPANSION * len(own))
    if expanded[id(root)] > limit:
        raise InputError(f"its YAML aliases expand {len(own):,} nodes to {expanded[id(root)]:,} (limit {limit:,})",
                         hint="an alias bomb, or a file that repeats a large block through aliases: write it out")


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _same_node(a: yaml.Node, b: yaml.Node, depth: int = 0) -> bool:
    """Whether two value nodes hold the same value as YAML types it (`8192` and `"8192"` differ by their tag)."""
    if a is b:
        return True
    if type(a) is not type(b) or a.tag != b.tag or depth > 64:
        return False
    if isinstance(a, yaml.ScalarNode):
        return a.value == b.value
    if len(a.value) != len(b.value):
        return False
    if isinstance(a, yaml.SequenceNode):
        return all(_same_node(x, y, depth + 1) for x, y in zip(a.value, b.value))
    return all(_same_node(ka, kb, depth + 1) and _same_node(va, vb, depth + 1)
               for (ka, va), (kb, vb) in zip(a.value, b.value))


def _check_keys(node: yaml.MappingNode, keys: yaml.constructor.SafeConstructor) -> None:
    seen: dict[Any, yaml.Node] = {}
    values: dict[Any, yaml.Node] = {}
    for key_node, value_node in node.value:
        if key_node.tag == _MERGE_TAG or not isinstance(key_node, yaml.ScalarNode):
            continue  # merged keys may be overridden; complex keys do not occur in deployment files
        if key_node.tag == _STR_TAG:
            value = key_node.value  # nearly every key: a plain string, no constructor needed
        else:
            try:
                value = keys.construct_object(key_node)  # as YAML types it: `1` and `'1'` are different keys
            except yaml.YAMLError:
                value = key_node.value
        try:
            first = seen.get(value)
        except TypeError:  # an unhashable key is refused later, by the constructor, with its own message
            continue
        if first is not None:
            if _same_node(values[value], value_node):
                continue  # the same value twice: every reader keeps it, whichever copy it takes
            raise InputError(f"key {value!r} is given twice in one mapping (lines {_line(first)} and "
                             f"{_line(key_node)})", hint="keep one: tools disagree on which copy wins")
        seen[value] = key_node
        values[value] = value_node


def _documents(text: str, where: str, *, per_document: bool = False) -> list[Any]:
    loader = _Loader(text)
    docs: list[Any] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            try:
                _check_node_graph(node)
                docs.append(loader.construct_document(node))
            except InputError as err:
                if not per_document:
                    raise err.located(where) from None
                docs.append(err.located(where))
            except yaml.constructor.ConstructorError as err:
                if not per_document:
                    raise
                docs.append(InputError(_yaml_error(err), where=where, hint="check the document's values"))
    finally:
        loader.dispose()
    return [d for d in docs if d is not None]


_REWORD_MAX_CHARS = 16 * 1024  # deployment files are a few KiB; past this the plainer wording is not worth its time
_REWORD_MAX_FLOW_OPENERS = 256  # bounds the flow depth, where the pure-Python scanner is quadratic


def _cheap_to_reword(text: str) -> bool:
    return len(text) <= _REWORD_MAX_CHARS and text.count("[") + text.count("{") <= _REWORD_MAX_FLOW_OPENERS


def load_yaml_text(text: str, *, where: str, per_document: bool = False) -> list[Any]:
    """Every document of a YAML text ('---' separated), None documents dropped; errors located at `where`.

    `per_document`: a document that parses but cannot be built (an unhashable `{{PLACEHOLDER}}` key, a bomb) is
    returned as its InputError in its place, so the other documents of a manifest are still read."""
    try:
        return _documents(text, where, per_document=per_document)
    except InputError:
        raise
    except RecursionError:
        raise InputError("is nested too deeply to read", where=where) from None
    except ValueError:  # an integer of more than 4,300 digits: Python's int() refuses to convert it
        raise InputError("holds a number too long to read (more than 4,300 digits)", where=where) from None
    except yaml.YAMLError as err:  # noqa: F841 (used below; ruff misreads the rebinding in the nested except)
        if _Loader is not yaml.SafeLoader and _cheap_to_reword(text):
            # the C parser found it; PyYAML's own parser words the same error more plainly ("found character '\\t'"
            # where libyaml says "found character"), at its cost: pure Python, linear in the text (about 0.3 s
            # for 16 KiB here) and quadratic in flow depth (0.25 s for 1,000 '['). A larger text keeps libyaml's
            # wording, which names the same line and column.
            try:
                list(yaml.compose_all(text, Loader=yaml.SafeLoader))
            except yaml.YAMLError as plain:
                err = plain
            except RecursionError:
                pass
        raise InputError(_yaml_error(err), where=where, hint="check indentation, brackets and quotes") from None


def load_yaml_documents(path: Path) -> list[Any]:
    """Every document of a YAML file ('---' separated); an empty file is an error."""
    docs = load_yaml_text(read_text(path), where=str(path))
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
    return strict(path)


def load_json_text(text: str, *, where: str) -> Any:
    """JSON inside another file (a --kv-transfer-config value, a ConfigMap entry), read as load_json reads a file."""
    return loads(text, where=where)


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
