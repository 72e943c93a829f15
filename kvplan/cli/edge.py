"""The one place that turns kvplan's exceptions into the contract's one line on stderr and its exit code, and the
one output sink every command writes through.

Commands raise KvplanError (and its subclasses, each carrying its exit code); `guarded` reports it as
`error: <where> — <what> (<hint>)`, and, when the command was asked for --json (or check's --format json), also
prints `{"error": {"where": ..., "what": ..., "hint": ...}, "exit_code": N}` on stdout, unless the command had
already printed its own JSON object: with --json, stdout always holds exactly one JSON object (docs/json.md).
Tracebacks only with KVPLAN_DEBUG=1.

Output (docs/json.md, "Exit codes"): stdout is wrapped for the command's run, so a failed write is reported, not a
traceback. A reader that went away (`kvplan models --json | head -c 100`: EPIPE) ends the command quietly with
exit 141, the shell's code for a process ended by SIGPIPE (128 + 13), never 1, which means a definite "no". Any
other failed write (`> /dev/full`: ENOSPC, EIO) is one error line and exit 2.
"""

from __future__ import annotations

import errno
import functools
import os
import sys

import typer

from kvplan.core.errors import EXIT_INPUT, KvplanError

EXIT_PIPE_CLOSED = 141  # 128 + SIGPIPE, as a shell reports `yes | head -1`
EXIT_INTERRUPTED = 130  # 128 + SIGINT


class OutputClosed(Exception):
    """The reader of stdout went away (EPIPE): nothing more can be said, and no one is left to read it."""


class OutputError(KvplanError):
    """stdout cannot be written (a full disk, an I/O error). Exit 2."""

    exit_code = EXIT_INPUT


class Interrupted(KvplanError):
    """Ctrl-C: the shell's 130."""

    exit_code = EXIT_INTERRUPTED


_REASONS = {errno.ENOSPC: "no space left on the device", errno.EIO: "input/output error", errno.EDQUOT: "disk quota exceeded",
            errno.EFBIG: "file too large", errno.EBADF: "it is closed"}


def _translate(err: OSError) -> Exception:
    if isinstance(err, BrokenPipeError) or err.errno in (errno.EPIPE, errno.ECONNRESET):
        return OutputClosed()
    reason = _REASONS.get(err.errno, err.strerror or str(err))
    return OutputError(f"cannot write the output: {reason}", where="stdout", hint="write to another file or device")


class Sink:
    """stdout as commands write it: every write and flush either succeeds or raises OutputClosed / OutputError.
    Remembers whether anything was written, so the edge knows whether a JSON error object may still be printed."""

    def __init__(self, stream):
        self._stream = stream
        self.written = False

    def write(self, text: str) -> int:
        if text:
            self.written = True
        try:
            return self._stream.write(text)
        except OSError as err:
            raise _translate(err) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as err:
            raise _translate(err) from None
        except ValueError:  # flushing a closed file
            raise OutputError("cannot write the output: it is closed", where="stdout") from None

    def __getattr__(self, name):  # isatty, fileno, encoding, buffer...: rich and click ask for them
        return getattr(self._stream, name)


# ASCII forms of the characters kvplan's own text uses, for a stdout or stderr that cannot encode them (an ASCII or
# Latin-1 pipe, LC_ALL=C): the output says the same in plainer letters instead of ending in UnicodeEncodeError
# (issue 26). Anything else that does not encode (a name from a user's file) is written as a backslash escape.
_ASCII_FORMS = {"—": "-", "–": "-", "·": "|", "×": "x", "…": "...", "→": "->", "←": "<-", "≤": "<=", "≥": ">=",
                "≈": "~", "±": "+/-", "µ": "u", "✓": "ok", "✗": "x", "≠": "!=", "’": "'", "‘": "'", "“": '"',
                "”": '"', "•": "*", "−": "-", "½": "1/2", "²": "2", "³": "3", "°": " deg"}


def _plainer(err: UnicodeError):
    if not isinstance(err, UnicodeEncodeError):
        raise err
    text = err.object[err.start:err.end]
    out = "".join(_ASCII_FORMS.get(c, c.encode("ascii", "backslashreplace").decode("ascii")) for c in text)
    return out, err.end


def encode_anywhere() -> None:
    """Make stdout and stderr write what their encoding cannot hold in ASCII forms (see _ASCII_FORMS)."""
    import codecs

    try:
        codecs.lookup_error("kvplan-plainer")
    except LookupError:
        codecs.register_error("kvplan-plainer", _plainer)
    for stream in (sys.stdout, sys.stderr):
        encoding = getattr(stream, "encoding", None) or "utf-8"
        try:
            "—·×".encode(encoding)
            continue
        except (UnicodeEncodeError, LookupError):
            pass
        if hasattr(stream, "reconfigure"):
            try:
                stream.reconfigure(errors="kvplan-plainer")
            except (ValueError, OSError):  # pragma: no cover - a stream that cannot be reconfigured keeps its way
                pass


def _say(line: str) -> None:
    """One line on stderr; a stderr that cannot be written is not worth a traceback either."""
    try:
        print(line, file=sys.stderr)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def error_object(err: KvplanError) -> str:
    """The --json form of an error (docs/json.md)."""
    import json  # only an error with --json writes one; json costs about 1 ms of every command's start-up

    return json.dumps(err.to_dict(), indent=2)


def silence_stdout(stream=None) -> None:
    """After a failed write to the process's own stdout, point fd 1 at /dev/null: Python's flush at exit would
    otherwise try the buffered rest again and complain on stderr (exit 120). Other streams are left alone."""
    if stream is not None and stream is not sys.__stdout__:
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.__stdout__.fileno())
        os.close(devnull)
    except (OSError, AttributeError, ValueError):
        pass


def wants_json(kwargs: dict) -> bool:
    """Whether the command was asked for one JSON object: --json, or check's --format json."""
    if kwargs.get("json_out"):
        return True
    fmt = kwargs.get("fmt")
    return getattr(fmt, "value", fmt) == "json"


def report(err: KvplanError, *, as_json: bool, stdout_used: bool) -> None:
    """The contract's error line, and the JSON error object when --json asked for one and none was printed yet."""
    _say(f"error: {err.one_line()}")
    if as_json and not stdout_used and not isinstance(err, OutputError):
        try:
            sys.stdout.write(error_object(err) + "\n")
            sys.stdout.flush()
        except (OSError, ValueError, OutputClosed, OutputError):
            pass


def guarded(command):
    """Map kvplan's exceptions to one stderr line and an exit code; run the command with stdout behind a Sink."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        as_json = wants_json(kwargs)
        outer = sys.stdout
        sink = outer if isinstance(outer, Sink) else Sink(outer)
        sys.stdout = sink
        try:
            try:
                result = command(*args, **kwargs)
            finally:
                sink.flush()  # a full disk shows here, inside the guard, not at interpreter exit
            return result
        except KvplanError as err:
            if os.environ.get("KVPLAN_DEBUG") == "1":
                raise
            sys.stdout = outer
            if isinstance(err, OutputError):
                silence_stdout(outer)
            report(err, as_json=as_json, stdout_used=sink.written)
            raise typer.Exit(err.exit_code) from None
        except RecursionError:
            if os.environ.get("KVPLAN_DEBUG") == "1":
                raise
            sys.stdout = outer
            report(KvplanError("input is nested too deeply to read"), as_json=as_json, stdout_used=sink.written)
            raise typer.Exit(EXIT_INPUT) from None
        except OutputClosed:
            silence_stdout(outer)
            raise typer.Exit(EXIT_PIPE_CLOSED) from None
        except KeyboardInterrupt:  # caught here: typer would turn it into a silent exit 130
            sys.stdout = outer
            report(Interrupted("interrupted"), as_json=as_json, stdout_used=sink.written)
            raise typer.Exit(EXIT_INTERRUPTED) from None
        finally:
            sys.stdout = outer

    return wrapper


def finish(stream=None) -> int | None:
    """Flush what typer itself printed (--help, --version) at the entry point: the exit code to use when the write
    failed (141 for a closed pipe, 2 with the error line otherwise), None when it went out."""
    stream = stream or sys.stdout
    try:
        stream.flush()
    except BrokenPipeError:
        silence_stdout()
        return EXIT_PIPE_CLOSED
    except OSError as err:
        failure = _translate(err)
        if isinstance(failure, OutputClosed):
            silence_stdout()
            return EXIT_PIPE_CLOSED
        _say(f"error: {failure.one_line()}")
        silence_stdout()
        return EXIT_INPUT
    except ValueError:
        return None
    return None
