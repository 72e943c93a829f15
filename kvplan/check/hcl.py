"""HCL, the native syntax of HashiCorp configuration (Nomad job files), read into blocks and values. Pure parsing.

What is read (the HCL native syntax spec, hashicorp/hcl hclsyntax/spec.md): bodies of attributes `name = value` and
blocks `type "label" ... { body }`; comments `#`, `//`, `/* */`; strings with escapes and `${...}` templates (kept
as written: the reader decides what a template means); heredocs `<<EOF` / `<<-EOF`; numbers, true / false / null;
tuples `[...]` and objects `{ k = v }` / `{ k: v }`. Any other expression (a variable reference, a function call,
arithmetic, a conditional) is an Expression holding its text: never evaluated, so the reader names it as unknown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from kvplan.core.errors import InputError

MAX_DEPTH = 64  # nesting of blocks and values: a Nomad job is a handful deep; a file nested deeper is not one


@dataclass(frozen=True)
class Expression:
    """An expression kvplan does not evaluate (`var.model`, `file("x")`, `a ? b : c`), as written."""

    text: str


@dataclass
class Block:
    type: str
    labels: tuple[str, ...]
    line: int
    attributes: dict[str, Any] = field(default_factory=dict)
    blocks: list["Block"] = field(default_factory=list)

    def children(self, type_: str) -> list["Block"]:
        return [b for b in self.blocks if b.type == type_]

    def child(self, type_: str) -> "Block | None":
        found = self.children(type_)
        return found[0] if found else None


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}


class _Parser:
    def __init__(self, text: str, where: str):
        self.text, self.i, self.where = text, 0, where

    def error(self, what: str) -> InputError:
        line = self.text.count("\n", 0, self.i) + 1
        return InputError(f"not HCL at line {line}: {what}", where=self.where)

    def line(self) -> int:
        return self.text.count("\n", 0, self.i) + 1

    # -------------------------------------------------------------- layout
    def skip(self, newlines: bool = True) -> None:
        text = self.text
        while self.i < len(text):
            c = text[self.i]
            if c in " \t\r" or (newlines and c == "\n"):
                self.i += 1
            elif c == "#" or text.startswith("//", self.i):
                end = text.find("\n", self.i)
                self.i = len(text) if end < 0 else end
            elif text.startswith("/*", self.i):
                end = text.find("*/", self.i + 2)
                if end < 0:
                    raise self.error("an unterminated /* comment")
                self.i = end + 2
            else:
                return

    def peek(self) -> str:
        return self.text[self.i] if self.i < len(self.text) else ""

    # -------------------------------------------------------------- bodies
    def body(self, depth: int, closing: str | None) -> Block:
        if depth > MAX_DEPTH:
            raise self.error(f"nested more than {MAX_DEPTH} deep")
        out = Block("", (), self.line())
        while True:
            self.skip()
            if self.i >= len(self.text):
                if closing:
                    raise self.error(f"a block is not closed with {closing}")
                return out
            if closing and self.peek() == closing:
                self.i += 1
                return out
            m = _IDENT.match(self.text, self.i)
            if not m:
                raise self.error(f"expected a name, found {self.text[self.i:self.i + 20]!r}")
            name, line = m.group(0), self.line()
            self.i = m.end()
            self.skip(newlines=False)
            if self.peek() == "=" and not self.text.startswith("==", self.i):
                self.i += 1
                self.skip(newlines=False)
                out.attributes[name] = self.value(depth + 1)
                continue
            labels = []
            while self.peek() in ('"',) or _IDENT.match(self.text, self.i):
                if self.peek() == '"':
                    labels.append(self.string())
                else:
                    label = _IDENT.match(self.text, self.i)
                    labels.append(label.group(0))
                    self.i = label.end()
                self.skip(newlines=False)
            if self.peek() != "{":
                raise self.error(f"expected = or {{ after {name}")
            self.i += 1
            block = self.body(depth + 1, "}")
            out.blocks.append(Block(name, tuple(labels), line, block.attributes, block.blocks))

    # -------------------------------------------------------------- values
    def value(self, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise self.error(f"nested more than {MAX_DEPTH} deep")
        c = self.peek()
        if c == '"':
            value: Any = self.string()
        elif self.text.startswith("<<", self.i):
            value = self.heredoc()
        elif c == "[":
            value = self.sequence(depth)
        elif c == "{":
            value = self.mapping(depth)
        else:
            m = _NUMBER.match(self.text, self.i)
            word = _IDENT.match(self.text, self.i)
            if m and (not word or word.start() != self.i):
                self.i = m.end()
                value = float(m.group(0)) if any(ch in m.group(0) for ch in ".eE") else int(m.group(0))
            elif word and word.group(0) in ("true", "false", "null") and not self._continues(word.end()):
                self.i = word.end()
                value = {"true": True, "false": False, "null": None}[word.group(0)]
            else:
                return Expression(self.raw_expression())
        if self._continues(self.i):  # `"a" + b`, `x ? y : z`: more expression follows the literal
            return Expression(f"{value!r} {self.raw_expression()}")
        return value

    def _continues(self, at: int) -> bool:
        rest = self.text[at:at + 64].lstrip(" \t")
        return bool(rest) and rest[0] not in "\n,]}#/)" and not rest.startswith("\r")

    def raw_expression(self) -> str:
        """The text of an expression up to the end of its line (or a , ] } that closes it at depth 0)."""
        start, depth, text = self.i, 0, self.text
        while self.i < len(text):
            c = text[self.i]
            if c in "([{":
                depth += 1
            elif c in ")]}":
                if depth == 0:
                    break
                depth -= 1
            elif c == '"':
                self.string()
                continue
            elif depth == 0 and (c in ",\n" or c == "#" or text.startswith("//", self.i)):
                break
            self.i += 1
        return text[start:self.i].strip()

    def string(self) -> str:
        text = self.text
        out: list[str] = []
        self.i += 1
        while self.i < len(text):
            c = text[self.i]
            if c == '"':
                self.i += 1
                return "".join(out)
            if c == "\n":
                break
            if c == "\\" and self.i + 1 < len(text):
                nxt = text[self.i + 1]
                out.append(_ESCAPES.get(nxt, "\\" + nxt))
                self.i += 2
                continue
            if text.startswith("${", self.i) or text.startswith("%{", self.i):
                end = self._template_end(self.i + 2)
                out.append(text[self.i:end + 1])
                self.i = end + 1
                continue
            out.append(c)
            self.i += 1
        raise self.error("an unterminated string")

    def _template_end(self, i: int) -> int:
        depth, text = 1, self.text
        while i < len(text):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    return i
            elif text[i] == "\n":
                break
            i += 1
        raise self.error("an unterminated ${ template")

    def heredoc(self) -> str:
        m = re.compile(r"<<(-?)([A-Za-z_][A-Za-z0-9_]*)[ \t]*\r?\n").match(self.text, self.i)
        if not m:
            raise self.error("a heredoc without its marker")
        indent, marker = m.group(1) == "-", m.group(2)
        end = re.compile(rf"^[ \t]*{re.escape(marker)}[ \t]*\r?$", re.M).search(self.text, m.end())
        if not end:
            raise self.error(f"a heredoc not closed by {marker}")
        lines = self.text[m.end():end.start()].split("\n")[:-1] if self.text[m.end():end.start()] else []
        self.i = end.end()
        if indent:  # <<- strips the smallest indentation of its lines
            width = min((len(x) - len(x.lstrip(" \t")) for x in lines if x.strip()), default=0)
            lines = [x[width:] for x in lines]
        return "\n".join(lines) + ("\n" if lines else "")

    def sequence(self, depth: int) -> list:
        self.i += 1
        out: list = []
        while True:
            self.skip()
            if self.peek() == "]":
                self.i += 1
                return out
            if not self.peek():
                raise self.error("a [ list is not closed")
            out.append(self.value(depth + 1))
            self.skip()
            if self.peek() == ",":
                self.i += 1

    def mapping(self, depth: int) -> dict:
        self.i += 1
        out: dict[str, Any] = {}
        while True:
            self.skip()
            if self.peek() == "}":
                self.i += 1
                return out
            if not self.peek():
                raise self.error("a { object is not closed")
            if self.peek() == '"':
                key = self.string()
            else:
                m = _IDENT.match(self.text, self.i)
                if not m:
                    raise self.error(f"expected a key, found {self.text[self.i:self.i + 20]!r}")
                key = m.group(0)
                self.i = m.end()
            self.skip(newlines=False)
            if self.peek() not in ("=", ":"):
                raise self.error(f"expected = after {key}")
            self.i += 1
            self.skip(newlines=False)
            out[key] = self.value(depth + 1)
            self.skip()
            if self.peek() == ",":
                self.i += 1


def parse(text: str, *, where: str) -> Block:
    """The file's top-level body (a Block with no type): its attributes and blocks, in order."""
    return _Parser(text, where).body(0, None)
