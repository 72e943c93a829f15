"""kvplan's Python API, one module per command (docs/api.md; check's is kvplan/check/entry.py). `import kvplan`
reaches these through its lazy module-level __getattr__, so a program pays for what it calls and never for typer, rich or torch.

Each function takes the keyword arguments its command's options are named after (`--kv-dtype` is `kv_dtype`) and
returns the command's result dataclass, whose to_dict() is the object its `--json` prints. Bad input raises
kvplan.InputError (exit code 2), something kvplan does not model kvplan.UnsupportedError (3); each carries `where`,
`what`, `hint` and `exit_code`, as the command's error line does. A definite "no" is an answer, not an error: it is in
the result (fits False, a check report's exit_code 1, a plan with no plans).
"""
