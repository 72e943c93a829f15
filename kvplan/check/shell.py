"""Shell text as a POSIX shell would run it, as far as a deployment check needs: the simple commands a script,
a Dockerfile's shell-form CMD, a `sh -c` string or a SkyPilot `run:` block executes, each split into words
with its variables expanded. Pure: nothing is executed.

What is understood: quotes and backslashes, comments, line continuations, `;` `&&` `||` `|` `&` and newlines,
redirections (their targets are dropped), `NAME=value` assignments (alone, or as a command's environment),
`export` (an exported name is in the environment of every command after it, with its value then), `$NAME`, `${NAME}`, `${NAME:-default}` / `-` / `:=` / `=` / `:+alt` / `+` / `:?msg` / `?` (defaults nested:
`${A:-${B:-8192}}`),
`$((arithmetic))` on whole numbers, `$0` (the script, when the reader names it) with `$(dirname "$0")` and
`$(cd DIR && pwd)`, and `if`/`elif`/`else` on `[ a = b ]`, `[ n -eq m ]`, `-z` / `-n` tests
(decided when their operands are known; otherwise both branches are read and a variable they set differently
is not known). Loops run their body once. A command substitution `$(...)` or a variable with no value is
"unresolved": its word carries the marker MARK + name + MARK, so the engine readers can name the variable a
verdict depends on instead of guessing its value. A quote or brace left open, or a word expanding past
MAX_EXPANSION characters, is ShellSyntaxError: the script cannot be read, in one line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# the marker of an unresolved word, and what the readers do with it, live apart so that a reader that meets none
# does not load the parser (benchmarks/cold_start.py); shell.MARK and the rest still answer here
from kvplan.check.marks import MARK, marker
from kvplan.check.marks import display as display, unresolved_names as unresolved_names

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPERATORS = ("&&", "||", ";;", ";", "&", "|", "\n")
_WORD_ENDS = frozenset(" \t\r") | {o[0] for o in _OPERATORS}
_REDIRECT = re.compile(r"^(\d*|&)(>>|>\||>&|<&|<<<|<<|<>|>|<)$")


@dataclass(frozen=True)
class Command:
    """One simple command: its words after expansion, and the environment assignments before it."""

    words: tuple[str, ...]
    env: dict = field(default_factory=dict, compare=False)
    line: int = 1


class ShellSyntaxError(ValueError):
    pass


# ------------------------------------------------------------------ tokens

@dataclass
class _Token:
    kind: str  # "word" | "op"
    value: str  # an operator, or the raw source text of a word (quotes kept, expanded later)
    line: int


def _tokens(text: str) -> list[_Token]:
    out: list[_Token] = []
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n and text[i + 1] == "\n":
            i += 2
            line += 1
            continue
        if c in " \t\r":
            i += 1
            continue
        if c == "#":
            while i < n and text[i] != "\n":
                i += 1
            continue
        op = next((o for o in _OPERATORS if text.startswith(o, i)), None)
        if op is not None:
            out.append(_Token("op", op, line))
            line += op.count("\n")
            i += len(op)
            continue
        start, start_line = i, line
        while i < n:
            c = text[i]
            if c in _WORD_ENDS:  # a blank, or the first character of an operator (& | ; newline)
                break
            if c == "\\":
                if i + 1 < n and text[i + 1] == "\n":
                    line += 1
                i += 2
                continue
            if c == "'":
                end = text.find("'", i + 1)
                if end < 0:
                    raise ShellSyntaxError(f"unterminated ' quote at line {line}")
                line += text.count("\n", i, end)
                i = end + 1
                continue
            if c == '"':
                i = _skip_double(text, i + 1, line)
                line += text.count("\n", start, i)
                continue
            if c == "$" and text.startswith("$(", i):
                i = _skip_parens(text, i + 1)
                continue
            if c == "$" and text.startswith("${", i):
                i = _skip_braces(text, i, line)
                continue
            if c == "`":
                end = text.find("`", i + 1)
                if end < 0:
                    raise ShellSyntaxError(f"unterminated ` at line {line}")
                i = end + 1
                continue
            if c in "<>":
                # a redirection operator ends the word before it (`2>&1`, `> log`)
                if i > start and not text[start:i].isdigit():
                    break
                j = i
                while j < n and text[j] in "<>&|":
                    j += 1
                out.append(_Token("redirect", text[start:j], start_line))
                start = i = j
                while i < n and text[i] in " \t":
                    i += 1
                start = i
                continue
            i += 1
        if i > start:
            out.append(_Token("word", text[start:i], start_line))
    return out


def _skip_double(text: str, i: int, line: int) -> int:
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == '"':
            return i + 1
        if text.startswith("$(", i):
            i = _skip_parens(text, i + 1)
            continue
        i += 1
    raise ShellSyntaxError(f'unterminated " quote at line {line}')


def _skip_braces(text: str, i: int, line: int = 0) -> int:
    """Index after the '}' closing the `${` at text[i], nested `${...}` and quotes inside counted (`${A:-${B:-8192}}`,
    a common way to give a default from another variable)."""
    return _skip_nested(text, i, "${", "}", f"unterminated ${{ at line {line}" if line else "unterminated ${")


def _skip_parens(text: str, i: int) -> int:
    """Index after the ')' matching text[i] == '('."""
    return _skip_nested(text, i, "(", ")", "unterminated $(")


def _skip_nested(text: str, i: int, opener: str, closer: str, unterminated: str) -> int:
    depth, n = 0, len(text)
    while i < n:
        if text.startswith(opener, i):
            depth += 1
            i += len(opener)
            continue
        c = text[i]
        if c == closer:
            depth -= 1
            if depth == 0:
                return i + 1
        elif c in "'\"":
            end = text.find(c, i + 1)
            i = end if end > 0 else n
        i += 1
    raise ShellSyntaxError(unterminated)


# ------------------------------------------------------------------ expansion

class _Vars:
    def __init__(self, env: dict, exported=()):
        self.values: dict[str, str | None] = dict(env)  # None: set, but not known
        self.exported: set[str] = set(exported)  # `export`ed: in the environment of every command after

    def environment(self) -> dict[str, str | None]:
        return {name: self.values[name] for name in self.exported if name in self.values}

    def get(self, name: str) -> str | None:
        return self.values.get(name)

    def known(self, name: str) -> bool:
        return name in self.values and self.values[name] is not None

    def is_set(self, name: str) -> bool:
        return name in self.values


# The longest text one word may expand to. A real launch line is a few KiB; 856 bytes of `A=$A$A` lines double a
# variable to terabytes (issue 26: it exhausted memory), so expansion stops here and the script cannot be read.
MAX_EXPANSION = 1 << 20


def _expand(raw: str, vars: _Vars, *, split: bool = True) -> list[str]:
    """The words one raw word expands to (quote removal, parameter and arithmetic expansion, field splitting of
    unquoted expansions). An unresolved expansion is one marker, kept in its own field when unquoted."""
    fields = _expand_fields(raw, vars, split=split)
    if sum(len(f) for f in fields) > MAX_EXPANSION:
        raise ShellSyntaxError(f"a word expands to more than {MAX_EXPANSION:,} characters (a variable that doubles "
                               "itself?)")
    return fields


def _expand_fields(raw: str, vars: _Vars, *, split: bool) -> list[str]:
    fields: list[str] = [""]
    started = False  # a field exists even if empty ("" is one word; an unquoted empty expansion is none)
    i, n = 0, len(raw)

    def add(text: str, quoted: bool) -> None:
        nonlocal started
        if quoted or not split:
            fields[-1] += text
            started = True
            return
        parts = re.split(r"[ \t\n]+", text)
        for k, part in enumerate(parts):
            if k:
                if started or fields[-1]:
                    fields.append("")
                started = False
            if part:
                fields[-1] += part
                started = True

    while i < n:
        c = raw[i]
        if c == "\\":
            if i + 1 < n:
                fields[-1] += raw[i + 1]
                started = True
            i += 2
            continue
        if c == "'":
            end = raw.index("'", i + 1)
            fields[-1] += raw[i + 1:end]
            started = True
            i = end + 1
            continue
        if c == '"':
            j, buf = i + 1, ""
            while raw[j] != '"':
                if raw[j] == "\\" and raw[j + 1] in '$`"\\\n':
                    # \<newline> in double quotes continues the line: both go (POSIX 2.2.3)
                    buf += raw[j + 1] if raw[j + 1] != "\n" else ""
                    j += 2
                    continue
                if raw[j] == "$":
                    text, j = _dollar(raw, j, vars)
                    buf += text
                    continue
                buf += raw[j]
                j += 1
            add(buf, quoted=True)
            started = True
            i = j + 1
            continue
        if c == "$":
            text, i = _dollar(raw, i, vars)
            # an unknown value is one marker, whatever spaces its name has (`$(dirname $1)`): not split
            add(text, quoted=MARK in text)
            continue
        if c == "`":
            end = raw.index("`", i + 1)
            add(marker("`" + raw[i + 1:end] + "`"), quoted=False)
            i = end + 1
            continue
        fields[-1] += c
        started = True
        i += 1
    if not started and fields[-1] == "":
        fields.pop()
    return fields


def _dollar(raw: str, i: int, vars: _Vars) -> tuple[str, int]:
    """Expand the `$...` at raw[i]; returns (text, index after it)."""
    if raw.startswith("$((", i):
        end = _skip_parens(raw, i + 1)
        expr = raw[i + 3:end - 2]
        return _arithmetic(expr, vars), end
    if raw.startswith("$(", i):
        end = _skip_parens(raw, i + 1)
        known = _substitution(raw[i + 2:end - 1], vars)
        return (marker(raw[i:end]) if known is None else known), end
    if raw.startswith("${BASH_SOURCE[0]}", i) or raw.startswith("${BASH_SOURCE}", i):
        end = raw.index("}", i)
        return (marker("${BASH_SOURCE}") if vars.get("0") is None else vars.get("0")), end + 1
    if raw.startswith("${", i):
        end = _skip_braces(raw, i)
        return _parameter(raw[i + 2:end - 1], vars), end
    m = _NAME.match(raw, i + 1)
    if m:
        name = m.group(0)
        value = vars.get(name)
        return (marker(name) if value is None else value), m.end()
    if i + 1 < len(raw) and raw[i + 1] == "0" and vars.get("0") is not None:
        return vars.get("0"), i + 2  # the script's own path, as the reader gives it
    if i + 1 < len(raw) and raw[i + 1] in "@*#?$!0123456789":
        return marker("$" + raw[i + 1]), i + 2
    return "$", i + 1


def _substitution(body: str, vars: _Vars) -> str | None:
    """The output of the one kind of command substitution a script's paths are built with, when its operand is
    known: `dirname WORD` (of "$0": the script's folder) and `cd DIR && pwd` (DIR, as a path relative to where the
    script's own paths are read). Anything else runs a program: unknown (None)."""
    import posixpath

    body = body.strip()
    m = re.fullmatch(r"dirname\s+(?:--\s+)?(\S+)", body)
    if m:
        word = "".join(_expand(m.group(1), vars, split=False))
        return None if MARK in word else (posixpath.dirname(word) or ".")
    m = re.fullmatch(r"cd\s+(?:-P\s+)?(.+?)\s*(?:&&|;)\s*pwd(?:\s+-P)?", body, re.S)
    if m:
        words = _expand(m.group(1), vars)
        return None if len(words) != 1 or MARK in words[0] else words[0]
    return None


def _parameter(body: str, vars: _Vars) -> str:
    m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-=+?])(.*))?", body, re.S)
    if not m:
        return marker("${" + body + "}")
    name, op, word = m.group(1), m.group(2), m.group(3) or ""
    value = vars.get(name)
    unset_or_empty = not vars.is_set(name) or (value == "" if op and op.startswith(":") else False)
    unknown = vars.is_set(name) and value is None
    if op is None:
        return marker(name) if value is None else value
    if unknown:
        return marker(name)
    alt = "".join(_expand(word, vars, split=False)) if word else ""
    if op in (":-", "-"):
        return alt if (not vars.is_set(name) or (op == ":-" and value == "")) else value
    if op in (":=", "="):
        if not vars.is_set(name) or (op == ":=" and value == ""):
            vars.values[name] = alt
            return alt
        return value
    if op in (":+", "+"):
        return "" if (not vars.is_set(name) or (op == ":+" and value == "")) else alt
    # :? and ?: an error when unset; the file requires it from outside
    return marker(name) if unset_or_empty else value


def _arithmetic(expr: str, vars: _Vars) -> str:
    """$((expr)) on whole numbers; an unknown variable in it is the unresolved name."""
    names = re.findall(r"\$?\{?([A-Za-z_][A-Za-z0-9_]*)\}?", expr)
    for name in names:
        value = vars.get(name)
        if value is None or not re.fullmatch(r"\s*-?\d+\s*", value):
            return marker(name)
    text = re.sub(r"\$?\{?([A-Za-z_][A-Za-z0-9_]*)\}?", lambda m: vars.get(m.group(1)).strip(), expr)
    if not re.fullmatch(r"[\d\s+\-*/%()]+", text):
        return marker("$((" + expr.strip() + "))")
    try:
        return str(_eval_int(text))
    except (ZeroDivisionError, SyntaxError, ValueError, OverflowError, RecursionError):
        return marker("$((" + expr.strip() + "))")


def _eval_int(text: str) -> int:
    import ast

    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            return -ev(node.operand) if isinstance(node.op, ast.USub) else ev(node.operand)
        if isinstance(node, ast.BinOp):
            a, b = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Add):
                return a + b
            if isinstance(node.op, ast.Sub):
                return a - b
            if isinstance(node.op, ast.Mult):
                return a * b
            if isinstance(node.op, (ast.Div, ast.FloorDiv)):
                return int(a / b)  # the shell truncates toward zero
            if isinstance(node.op, ast.Mod):
                return a % b
        raise SyntaxError("not arithmetic")

    return ev(ast.parse(text.replace("/", "//"), mode="eval"))


# ------------------------------------------------------------------ statements

_KEYWORDS = {"if", "then", "elif", "else", "fi", "for", "while", "until", "do", "done", "case", "esac", "{", "}", "!"}


def commands(text: str, env: dict | None = None) -> list[Command]:
    """Every simple command of a shell text, in order, variables expanded; ShellSyntaxError when it cannot be read
    (unbalanced quotes or braces the tokenizer let through, an expansion past MAX_EXPANSION)."""
    tokens = _tokens(text)
    statements = _statements(tokens)
    vars = _Vars(env or {})
    out: list[Command] = []
    try:
        _run(statements, vars, out, certain=True)
    except ShellSyntaxError:
        raise
    except (ValueError, IndexError) as err:  # a quote or brace left open inside an expansion's word
        raise ShellSyntaxError(f"a quote or brace is not closed ({type(err).__name__})") from None
    return out


def _statements(tokens: list[_Token]) -> list[list[_Token]]:
    """Split into simple statements at operators; keywords that open or close blocks become their own statements."""
    out: list[list[_Token]] = []
    current: list[_Token] = []
    for tok in tokens:
        if tok.kind == "op":
            if current:
                out.append(current)
                current = []
            continue
        if tok.kind == "word" and not current and tok.value in _KEYWORDS:
            out.append([tok])
            continue
        current.append(tok)
    if current:
        out.append(current)
    return out


def _run(statements: list[list[_Token]], vars: _Vars, out: list[Command], *, certain: bool) -> None:
    i = 0
    while i < len(statements):
        stmt = statements[i]
        head = stmt[0].value if stmt[0].kind == "word" else ""
        if head == "if" and len(stmt) == 1:
            i = _run_if(statements, i, vars, out, certain=certain)
            continue
        if head in ("for", "while", "until"):
            i = _run_loop(statements, i, vars, out)
            continue
        if head == "case":
            depth = 1
            i += 1
            while i < len(statements) and depth:
                word = statements[i][0].value
                depth += word == "case"
                depth -= word == "esac"
                i += 1
            continue
        if head in ("{", "}", "!", "then", "do", "done", "fi", "else", "elif", "esac"):
            i += 1
            continue
        _simple(stmt, vars, out, certain=certain)
        i += 1


def _block(statements, i: int, stops: tuple[str, ...]) -> tuple[list, int]:
    """Statements from i up to the first of `stops` at nesting depth 0; (block, index of the stop)."""
    depth, start = 0, i
    while i < len(statements):
        word = statements[i][0].value if statements[i][0].kind == "word" else ""
        if word in ("if", "for", "while", "until", "case"):
            depth += 1
        elif word in ("fi", "done", "esac"):
            if depth == 0 and word in stops:
                return statements[start:i], i
            depth -= 1
        elif depth == 0 and word in stops:
            return statements[start:i], i
        i += 1
    raise ShellSyntaxError(f"no closing {' or '.join(stops)}")


def _run_if(statements, i: int, vars: _Vars, out: list[Command], *, certain: bool) -> int:
    branches: list[tuple[list, list | None]] = []  # (condition statements, body); condition None for else
    i += 1
    while True:
        cond, i = _block(statements, i, ("then",))
        body, i = _block(statements, i + 1, ("elif", "else", "fi"))
        branches.append((cond, body))
        word = statements[i][0].value
        if word == "elif":
            if len(statements[i]) > 1:
                statements = statements[:i] + [[statements[i][0]], statements[i][1:]] + statements[i + 1:]
            i += 1
            continue
        if word == "else":
            body, i = _block(statements, i + 1, ("fi",))
            branches.append((None, body))
        break
    taken = None
    runnable = []
    for cond, body in branches:
        verdict = True if cond is None else _test(cond, vars)
        if verdict is True and taken is None:
            taken = body
            break
        if verdict is None:
            runnable.append(body)
    if taken is not None and not runnable:
        _run(taken, vars, out, certain=certain)
    else:
        bodies = runnable + ([taken] if taken is not None else [])
        if taken is None and all(c is not None for c, _ in branches):
            bodies.append([])  # no branch may run at all
        _run_uncertain(bodies, vars, out)
    return i + 1


def _run_uncertain(bodies, vars: _Vars, out: list[Command]) -> None:
    """Branches that may or may not run: every command is read; a variable they leave different is unknown."""
    results = []
    for body in bodies:
        scope = _Vars(vars.values, vars.exported)
        _run(body, scope, out, certain=False)
        results.append(scope.values)
        vars.exported |= scope.exported  # a branch that may run may export: its value is settled below
    names = {k for r in results for k in r}
    for name in names:
        values = {r.get(name, vars.values.get(name, "\x01unset")) for r in results}
        if len(values) == 1:
            value = values.pop()
            if value != "\x01unset":
                vars.values[name] = value
        else:
            vars.values[name] = None


def _run_loop(statements, i: int, vars: _Vars, out: list[Command]) -> int:
    head = statements[i]
    if head[0].value == "for" and len(head) >= 2:
        vars.values[head[1].value] = None
    start = i + 1
    while start < len(statements) and statements[start][0].value != "do":
        start += 1
    body, end = _block(statements, start + 1, ("done",))
    _run_uncertain([body, []], vars, out)
    return end + 1


def _test(cond, vars: _Vars) -> bool | None:
    """The value of an if-condition when it is a decidable test, else None."""
    if not cond:
        return None
    stmt = cond[-1]
    words: list[str] = []
    for tok in stmt:
        if tok.kind != "word":
            return None
        words.extend(_expand(tok.value, vars, split=False))
    if words[:1] == ["["] and words[-1:] == ["]"]:
        words = words[1:-1]
    elif words[:1] == ["[["] and words[-1:] == ["]]"]:
        words = words[1:-1]
    elif words[:1] == ["test"]:
        words = words[1:]
    else:
        return None
    negate = False
    if words[:1] == ["!"]:
        negate, words = True, words[1:]
    if any(MARK in w for w in words):
        return None
    result: bool | None = None
    if len(words) == 2 and words[0] in ("-z", "-n"):
        result = (words[1] == "") if words[0] == "-z" else (words[1] != "")
    elif len(words) == 3:
        a, op, b = words
        if op in ("=", "=="):
            result = a == b
        elif op == "!=":
            result = a != b
        elif op in ("-eq", "-ne", "-gt", "-lt", "-ge", "-le"):
            try:
                x, y = int(a), int(b)
            except ValueError:
                return None
            result = {"-eq": x == y, "-ne": x != y, "-gt": x > y, "-lt": x < y, "-ge": x >= y, "-le": x <= y}[op]
    if result is None:
        return None
    return not result if negate else result


def _simple(stmt: list[_Token], vars: _Vars, out: list[Command], *, certain: bool) -> None:
    words: list[str] = []
    env: dict[str, str | None] = {}
    assigning = True
    skip_next = False
    for tok in stmt:
        if skip_next:
            skip_next = False
            continue
        if tok.kind == "redirect":
            skip_next = True  # the redirection's target (a file, or the 1 of 2>&1) is no argument
            continue
        if assigning:
            m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", tok.value, re.S)
            if m:
                value = "".join(_expand(m.group(2), vars, split=False))
                env[m.group(1)] = None if MARK in value else value
                continue
            assigning = False
        words.extend(_expand(tok.value, vars))
    if not words:
        vars.values.update(env)  # a plain assignment sets shell variables
        return
    if words[0] == "export":
        for word in words[1:]:
            name, eq, value = word.partition("=")
            if not _NAME.fullmatch(name):
                continue  # an option (-n, -p) or a malformed name
            if eq:
                vars.values[name] = None if MARK in value else value
            vars.exported.add(name)
        return
    if words[0] in ("source", ".") or words[0] in ("unset",):
        if words[0] == "unset":
            for name in words[1:]:
                vars.values.pop(name, None)
                vars.exported.discard(name)
        return
    # the command's environment: what the script exported, then its own VAR=x prefixes
    out.append(Command(words=tuple(words), env={**vars.environment(), **env}, line=stmt[0].line))
