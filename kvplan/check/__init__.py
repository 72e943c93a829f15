"""`kvplan check`: deployment files -> deployments (readers/) -> verdicts (judge.py) -> a report (report.py) in
text, json, markdown or junit (formats.py). run.py ties them together."""

import sys
import types


def _entry():
    # the package runs before any of its modules (kvplan.check.shell, .report, ...): importing entry here would load
    # all of `kvplan check` (every reader, the engines' launch readers) for whoever needs one of them
    from kvplan.check.entry import check

    return check


class _CallablePackage(types.ModuleType):
    """`kvplan.check(paths, ...)` is the Python API's check (entry.py, docs/api.md). Importing this package
    binds the name `check` on kvplan to the package itself, so the package answers the call rather than hide the
    function."""

    def __call__(self, configs=None, **options):
        return _entry()(configs, **options)

    @property
    def __signature__(self):  # inspect.signature(kvplan.check): the API function's arguments
        import inspect

        return inspect.signature(_entry())


sys.modules[__name__].__class__ = _CallablePackage
