"""Commands beyond estimate/models/gpus/show, one module each with `register(app, guarded)`.

Each module must import only typer at top level and defer everything heavy into the command body,
so `kvplan --help` and `kvplan estimate` stay fast (and torch-free).
"""

