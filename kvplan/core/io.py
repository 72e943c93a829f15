"""Output that must be exact whatever the reader: JSON of result dataclasses, and files written whole or not at
all. Pure of typer and rich."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from kvplan.core.errors import InputError


class JsonResult:
    """A result dataclass whose to_dict() is exactly the object its command's --json prints (docs/api.md): the JSON
    text is parsed back, so tuples are lists and keys are strings there as well."""

    def to_dict(self) -> dict[str, Any]:
        import json  # on first use: a text report writes no JSON, and json costs about 1 ms of start-up

        return json.loads(to_json(self))


def to_json(result: Any) -> str:
    import json  # on first use, as in to_dict

    data = dataclasses.asdict(result) if dataclasses.is_dataclass(result) and not isinstance(result, type) else result
    return json.dumps(data, indent=2, default=_json_default)


def _json_default(value: Any):
    if isinstance(value, (tuple, set, frozenset)):
        return list(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def write_file(path: str, write, *, what: str = "the output") -> None:
    """Write an output file (-o/--output) whole or not at all.

    `write(target)` writes to the path it is given. A regular file is written to a temporary file beside
    it and renamed over it at the end, so a failure (a full disk, an error while drawing, Ctrl-C) never
    leaves a truncated file or an empty new one. Devices and pipes (-o /dev/stdout) are written in place.
    OSErrors become one-line input errors naming the path.
    """
    import errno
    import tempfile

    if not path:
        raise InputError("is empty", where="--output", hint="give a file name, or leave the option out")
    target = os.path.realpath(os.path.expanduser(path))  # through a symlink, not over it
    try:
        if os.path.isdir(target):
            raise InputError("is a directory", where=path, hint="give a file name")
        if os.path.exists(target) and not os.path.isfile(target):
            write(target)  # a device or a FIFO: nothing to replace
            return
        folder = os.path.dirname(target) or "."
        if not os.path.isdir(folder):
            raise InputError("its folder does not exist", where=path, hint=f"create {os.path.dirname(path) or '.'} first")
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(target)}.", suffix=".tmp")
        os.close(fd)
        try:
            write(tmp)
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; a report is as readable as any new file
            os.replace(tmp, target)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
    except OSError as err:
        reason = {errno.EACCES: "permission denied", errno.EPERM: "permission denied", errno.EROFS: "read-only file system",
                  errno.ENOSPC: "no space left on the device", errno.ENAMETOOLONG: "file name too long"}.get(
            err.errno, err.strerror or str(err))
        raise InputError(f"cannot write {what}: {reason}", where=path, hint="choose another path with -o") from None


def refuse_over_inputs(output: str | None, inputs, *, option: str) -> None:
    """An output path that is one of the command's inputs, or inside a folder it reads, is refused before any work:
    `check X -o X`, `plan CFG --emit-to CFG` or `calibrate a.log --save a.log` would replace what was read (issue 26).
    Paths are compared after symlinks are followed, and as files (a hard link to an input is the input)."""
    if not output:
        return
    target = os.path.realpath(os.path.expanduser(output))
    for given in inputs:
        if not given or not isinstance(given, (str, os.PathLike)):
            continue
        source = os.path.realpath(os.path.expanduser(os.fspath(given)))
        if not os.path.exists(source):  # a bundled name, an inline workload: no file is read there
            continue
        try:
            same = source == target or (os.path.exists(target) and os.path.samefile(source, target))
            inside = os.path.isdir(source) and os.path.commonpath([source, target]) == source
        except (OSError, ValueError):
            continue
        if same or inside:
            raise InputError(f"is {'also an input' if same else 'inside the input folder'} {os.fspath(given)}",
                             where=f"{option} {output}", hint="write the output to a path the command does not read")
