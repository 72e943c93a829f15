"""Commands beyond estimate/models/gpus/show, one module each with `register(app, guarded)`.

Each module must import only typer at top level and defer everything heavy into the command body,
so `kvplan --help` and `kvplan estimate` stay fast (and torch-free).
"""


def parsed(parse, text, flag: str):
    """parse(text, what=flag) with an error located at the flag: units names the flag inside its message
    ("--prompt must be positive"); the contract's line names it once, as the <where>."""
    from kvplan.errors import InputError

    try:
        return parse(text, what=flag)
    except InputError as err:
        if err.where is None:
            err.what = err.what.removeprefix(f"{flag} ")
            err.located(flag)
        raise err from None
