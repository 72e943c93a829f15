"""`kvplan check`: deployment files -> deployments (readers/) -> verdicts (judge.py) -> a report (report.py) in
text, json, markdown or junit (formats.py). run.py ties them together."""

import sys
import types


class _CallablePackage(types.ModuleType):
    """`kvplan.check(paths, ...)` is the Python API's check (entry.py, docs/api.md). Importing this package
    binds the name `check` on kvplan to the package itself, so the package answers the call rather than hide the
    function."""

    def __call__(self, configs=None, **options):
        from kvplan.check.entry import check

        return check(configs, **options)

    @property
    def __signature__(self):  # inspect.signature(kvplan.check): the API function's arguments
        import inspect

        from kvplan.check.entry import check

        return inspect.signature(check)


sys.modules[__name__].__class__ = _CallablePackage
