"""JSON Schemas of the API's arguments, read from the functions' own signatures, so the HTTP API's OpenAPI document
and the MCP tools describe exactly what kvplan.estimate (and the rest) take. Pure: no server is imported here."""

from __future__ import annotations

import inspect
import re

# an annotation's words -> the JSON type they allow (os.PathLike is a path: a string over the wire)
_SCALARS = {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "None": "null", "PathLike": "string"}


def annotation_schema(annotation: str) -> dict:
    """The schema of one annotation as written (`str | int | None`, `list[str] | dict[str, str]`)."""
    types: list[str] = []
    schema: dict = {}
    for part in _split_union(annotation):
        part = part.strip()
        inner = re.fullmatch(r"(list|tuple)\[(.*)\]", part)
        if inner:
            types.append("array")
            items = annotation_schema(inner.group(2).split(",")[0] if inner.group(1) == "tuple" else inner.group(2))
            schema["items"] = items
        elif part.startswith("dict["):
            types.append("object")
            schema["additionalProperties"] = {"type": ["string", "number", "integer", "boolean"]}
        elif part in _SCALARS:
            types.append(_SCALARS[part])
        else:
            raise ValueError(f"no JSON type for the annotation {part!r}")
    unique = list(dict.fromkeys(types))
    schema["type"] = unique[0] if len(unique) == 1 else unique
    return schema


def _split_union(annotation: str) -> list[str]:
    """`a | list[b | c] | None` -> ['a', 'list[b | c]', 'None']: bars inside brackets stay."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(annotation):
        depth += ch == "["
        depth -= ch == "]"
        if ch == "|" and depth == 0:
            parts.append(annotation[start:i])
            start = i + 1
    parts.append(annotation[start:])
    return parts


def arguments_schema(function, *, leave_out: frozenset[str] = frozenset(), extra: dict | None = None,
                     descriptions: dict[str, str] | None = None) -> dict:
    """An object schema of `function`'s arguments (minus `leave_out`, plus `extra` properties): required are the
    arguments without a default; a default is shown where it is plain JSON."""
    properties, required = {}, []
    for name, parameter in inspect.signature(function).parameters.items():
        if name in leave_out:
            continue
        annotation = parameter.annotation
        if annotation is inspect.Parameter.empty:
            raise ValueError(f"{function.__name__}({name}) has no annotation")
        prop = annotation_schema(annotation if isinstance(annotation, str) else annotation.__name__)
        if parameter.default is inspect.Parameter.empty:
            required.append(name)
        elif parameter.default is None or isinstance(parameter.default, (str, int, float, bool)):
            prop["default"] = parameter.default
        if descriptions and name in descriptions:
            prop["description"] = descriptions[name]
        properties[name] = prop
    properties.update(extra or {})
    out = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        out["required"] = required
    return out


def matches(value, schema: dict) -> bool:
    """Whether a JSON value has one of the types the schema allows (and arrays their items')."""
    allowed = schema.get("type")
    allowed = [allowed] if isinstance(allowed, str) else list(allowed or [])
    for kind in allowed:
        if kind == "null" and value is None:
            return True
        if kind == "boolean" and isinstance(value, bool):
            return True
        if kind == "integer" and isinstance(value, int) and not isinstance(value, bool):
            return True
        if kind == "number" and isinstance(value, (int, float)) and not isinstance(value, bool):
            return True
        if kind == "string" and isinstance(value, str):
            return True
        if kind == "array" and isinstance(value, list):
            return all(matches(item, schema.get("items", {"type": ["string"]})) for item in value)
        if kind == "object" and isinstance(value, dict):
            return True
    return False
