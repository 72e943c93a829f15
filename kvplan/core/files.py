"""The one way kvplan reads a user's file: regular files only, size-capped, never blocking. Pure of typer and rich.

Every input (spec YAML, config.json, safetensors headers, deployment files, workloads, engine logs, a
`--config` inside --vllm-args, calibration files) is read here, so one bad path cannot stall a CI job:
- a FIFO would block `open()` until a writer appears, and /dev/zero or /dev/urandom never end: anything but a
  regular file is refused before it is read, naming what it is (`stat` follows symlinks, so a link to a
  device is refused too);
- the file is opened with O_NONBLOCK and checked again on the open descriptor (the path may have changed
  between the two looks), and at most `limit` + 1 bytes are read whatever the size `stat` claimed (files in
  /proc claim 0 bytes);
- every OSError becomes one InputError naming the path;
- inside `confined_to(roots)` (`kvplan check`: the repositories or folders being checked, --models-dir, the caches,
  --allow-path) a file whose real path (symlinks followed) lies outside every root is not opened: a deployment's
  `model: ../../etc/shadow` or a symlink in the repository to a host file would otherwise be read and its first
  line quoted in an error and the report (issue 26). It is cannot judge, naming the path only.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from contextvars import ContextVar
from pathlib import Path
from typing import Iterable, Iterator

from kvplan.core.errors import InputError, UnsupportedError

# a spec, a config.json or a deployment file is a few KiB; 8 MiB is generous
MAX_INPUT_BYTES = 8 * 2**20
# engine logs and workload files can be long (a day of server output, a million requests of CSV)
MAX_LOG_BYTES = 256 * 2**20

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)
_NOT_REGULAR_HINT = "kvplan reads regular files only; save the data to a file first"


def kind_of(mode: int) -> str | None:
    """'a FIFO (named pipe)', 'a character device', ... for a st_mode that is not a regular file or directory."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return None if stat.S_ISREG(mode) or stat.S_ISDIR(mode) else "not a regular file"


def _refuse_mode(mode: int, where: str) -> None:
    if stat.S_ISDIR(mode):
        raise InputError("is a directory, expected a file", where=where)
    kind = kind_of(mode)
    if kind is not None:
        raise InputError(f"is {kind}, not a regular file", where=where, hint=_NOT_REGULAR_HINT)


def _os_error(err: OSError, where: str) -> InputError:
    if isinstance(err, FileNotFoundError):
        return InputError("no such file", where=where, hint="check the path")
    if isinstance(err, PermissionError):
        return InputError("permission denied", where=where)
    if isinstance(err, IsADirectoryError):
        return InputError("is a directory, expected a file", where=where)
    reason = {errno.ELOOP: "is a loop of symbolic links", errno.ENAMETOOLONG: "has a name too long for the file system",
              errno.ENOTDIR: "has a part that is not a folder"}.get(err.errno)
    return InputError(reason or f"cannot be read: {err.strerror or err}", where=where)


_roots: ContextVar[tuple[str, ...] | None] = ContextVar("kvplan_read_roots", default=None)


@contextlib.contextmanager
def confined_to(roots: Iterable[Path | str]) -> Iterator[tuple[str, ...]]:
    """Inside the block, read_bytes/read_text open only files under `roots` (compared by real path)."""
    real = tuple(dict.fromkeys(os.path.realpath(os.path.expanduser(os.fspath(r))) for r in roots if r))
    token = _roots.set(real)
    try:
        yield real
    finally:
        _roots.reset(token)


def outside_roots(path: Path | str) -> bool:
    """Whether `path` is outside the roots of the enclosing confined_to block (never, outside one)."""
    roots = _roots.get()
    if roots is None:
        return False
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError):
        return True
    return not any(real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def _refuse_outside(path: Path | str, where: str) -> None:
    if outside_roots(path):
        raise UnsupportedError("is outside the repository or folders being checked: kvplan does not read it", where=where,
                               hint="check the repository that holds it, give its folder with --models-dir, or allow "
                                    "it with --allow-path DIR")


def check_regular(path: Path | str, *, where: str | None = None) -> None:
    """Refuse, without opening it, a path that is not a regular file (or does not exist)."""
    where = where or str(path)
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError) as err:  # ValueError: a NUL byte in the name
        raise _os_error(err, where) if isinstance(err, OSError) else InputError("is not a usable path", where=where) from None
    _refuse_mode(mode, where)


def read_bytes(path: Path | str, *, limit: int = MAX_INPUT_BYTES, where: str | None = None, prefix: int | None = None,
               what: str = "input files") -> bytes:
    """The file's bytes (at most `prefix` bytes of it when given), after the checks above.

    More than `limit` bytes is refused, naming the limit; with `prefix`, only that many are read and the size
    is not checked (a safetensors header is the first bytes of a file of many GiB)."""
    where = where or str(path)
    _refuse_outside(path, where)
    check_regular(path, where=where)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        raise _os_error(err, where) from None
    try:
        _refuse_mode(os.fstat(fd).st_mode, where)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=True) as f:
            fd = -1
            data = f.read(prefix if prefix is not None else limit + 1)
    except OSError as err:
        raise _os_error(err, where) from None
    finally:
        if fd >= 0:
            os.close(fd)
    if prefix is None and len(data) > limit:
        raise InputError(f"is more than {limit:,} bytes; {what} are limited to {limit:,}", where=where)
    return data


def read_text(path: Path | str, *, limit: int = MAX_INPUT_BYTES, where: str | None = None, encoding: str = "utf-8",
              errors: str = "strict", what: str = "input files") -> str:
    """The file as text (UTF-8 unless told), bounded as read_bytes is; undecodable bytes are one InputError."""
    where = where or str(path)
    data = read_bytes(path, limit=limit, where=where, what=what)
    try:
        return data.decode(encoding, errors=errors)
    except UnicodeDecodeError:
        raise InputError("is not UTF-8 text", where=where) from None
