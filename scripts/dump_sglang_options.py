"""Print SGLang's `launch_server` option table in the compact form kvplan/engines/sglang/launch_args.py keeps.

The table is read from SGLang's own parser object (ServerArgs.add_cli_args, srt/server_args.py), so an option
SGLang accepts is accepted by kvplan and anything else is refused. Needs the sglang wheel importable (its
server_args module imports no GPU code, but does import a few of SGLang's dependencies):

    pip download --no-deps sglang==0.5.23 -d /tmp/sgl && unzip -q /tmp/sgl/sglang-*.whl -d /tmp/sgl/tree
    pip install --target /tmp/sgldeps orjson psutil pybase64 requests msgspec pyzmq ...   # as the import asks
    PYTHONPATH=/tmp/sgl/tree:/tmp/sgldeps python scripts/dump_sglang_options.py > /tmp/table.txt

`--unclassified` prints instead the options kvplan has not classified (kvplan/engines/sglang/launch_args.py
classified(): modelled, refused by name, read only behind a refused gate (ONLY_WITH, DRAFT_ONLY), or NO_GPU_MEMORY
with a reason), one a line: what is left to read before a launch that sets one can be judged (needs only kvplan on
the path).
"""

from __future__ import annotations

import argparse


def kind_of(action: argparse.Action) -> str:
    name = type(action).__name__
    kind = getattr(action.type, "__name__", None) if action.type is not None else None
    if name in ("_StoreTrueAction", "DeprecatedStoreTrueAction"):
        return "true"
    if name == "BooleanOptionalAction":
        return "bool"
    if name == "DeprecatedStoreConstAction":
        return "str"
    base = {"str": "str", "int": "int", "float": "float", "human_readable_int": "hint", "loads": "json",
            "json_list_type": "json", "nullable_str": "str", "parse_cuda_graph_backend_arg": "str",
            "parse_cuda_graph_config_arg": "str", None: "str"}[kind]
    if action.nargs == "+":
        return "list_" + base
    if action.nargs == "*":
        return "star_" + base
    if action.nargs == "?":
        return "optarg"
    return base


def unclassified() -> None:
    from kvplan.engines.sglang import launch_args

    for opt in sorted(launch_args.options().values(), key=lambda o: o.dest):
        if not launch_args.classified(opt.dest):
            print(opt.flags[0])


def main() -> None:
    import sys

    if "--unclassified" in sys.argv[1:]:
        unclassified()
        return
    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        parts = [f"{kind_of(action):10s}", *action.option_strings]
        if action.choices:
            parts.append("choices=" + "|".join(str(c) for c in action.choices))
        if action.dest != action.option_strings[0].lstrip("-").replace("-", "_"):
            parts.append(f"dest={action.dest}")
        print("    " + " ".join(parts))


if __name__ == "__main__":
    main()
