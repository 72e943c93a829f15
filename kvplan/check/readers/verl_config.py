"""verl's Hydra trainer configs (verl/trainer/config/ppo_trainer.yaml and the files people write over it: `defaults:
[ppo_trainer, _self_]` then their own `data:`, `actor_rollout_ref:`, `trainer:`): the settings are read as the
overrides `python -m verl.trainer.main_ppo --config-name FILE` applies on top of verl's ppo_trainer defaults, and
judged as that launch's rollout (readers/rl_rollout.py verl).

Read: the keys under `data` and `actor_rollout_ref` (flattened to Hydra's dotted keys), OmegaConf interpolations of
another key of the file (`${data.max_prompt_length}`, `${oc.select:data.max_prompt_length,512}`: the key's value, else
the default). A `defaults` list with another entry than ppo_trainer and _self_ (a Megatron trainer, another rollout
group) composes settings kvplan does not have: cannot judge, naming it. A rollout name or model the file leaves to
the command line (verl's `???`, or absent) is cannot judge, naming it: the file alone does not start."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping

from kvplan.check.items import Workload
from kvplan.check.report import FORMAT_VERL
from kvplan.core.errors import UnsupportedError

# the defaults entries whose settings kvplan has (rl_rollout.py's tables are verl's ppo_trainer + rollout.yaml)
_KNOWN_DEFAULTS = {"ppo_trainer", "_self_"}
_READ = ("data", "actor_rollout_ref")
_VERL_VLLM_NAME = "vllm"  # rollout.name of verl's vLLM rollout (a verl setting's value, not kvplan's engine key)
_INTERPOLATION = re.compile(r"^\$\{(?:oc\.select:)?([\w.]+)(?:,([^}]*))?\}$")


def _lookup(doc: Mapping, path: str) -> Any:
    node: Any = doc
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _text(value: Any, doc: Mapping) -> str:
    """A leaf as the override text Hydra would read: null, True/False, numbers, an interpolation of a key of the file
    resolved (else left as written: the reader names it where it matters)."""
    if isinstance(value, str):
        m = _INTERPOLATION.match(value.strip())
        if m:
            found = _lookup(doc, m.group(1))
            if found is not None and not isinstance(found, (Mapping, list)):
                return _text(found, doc)
            if found is None and m.group(2) is not None:
                return m.group(2).strip()
        return value
    if value is None:
        return "null"
    return str(value)


def _flatten(prefix: str, node: Any, doc: Mapping, out: list[str]) -> None:
    if isinstance(node, Mapping):
        if not node:
            out.append(f"{prefix}={{}}")
        for key, value in node.items():
            _flatten(f"{prefix}.{key}", value, doc, out)
    elif isinstance(node, list):
        out.append(f"{prefix}=[{','.join(_text(v, doc) for v in node)}]")
    else:
        out.append(f"{prefix}={_text(node, doc)}")


def read(doc: Mapping, *, source: str, document: int | None, where: str, base_dir: Path) -> list:
    name = Path(source).stem
    blocker = None
    defaults = doc.get("defaults")
    entries = [e if isinstance(e, str) else next(iter(e), "") if isinstance(e, Mapping) else str(e)
               for e in (defaults if isinstance(defaults, list) else [])]
    other = [str(e) for e in entries if e not in _KNOWN_DEFAULTS]
    if other or (defaults is not None and not isinstance(defaults, list)):
        blocker = UnsupportedError(f"defaults: {', '.join(other) or defaults} composes settings from verl's other "
                                   "configs, which kvplan does not have (it knows ppo_trainer's)", where=f"{where}: defaults",
                                   hint="judge the rollout with --vllm-args")
    rollout = _lookup(doc, "actor_rollout_ref.rollout")
    engine = _lookup(doc, "actor_rollout_ref.rollout.name")
    # a rollout of another engine is refused by rl_rollout.py, naming it; a vLLM rollout needs its model
    for key in ("actor_rollout_ref.rollout.name", "actor_rollout_ref.model.path")[:2 if engine == _VERL_VLLM_NAME else 1]:
        value = _lookup(doc, key)
        if blocker is None and (value is None or value == "???"):
            blocker = UnsupportedError(f"{key} is not in the file (verl's default is ???): it is given where the "
                                       "trainer is launched", where=f"{where}: {key}",
                                       hint="check the launch script that names it, or judge with --vllm-args")
    words: list[str] = []
    for top in _READ:
        if isinstance(doc.get(top), Mapping):
            _flatten(top, doc[top], doc, words)
    notes = ("a verl trainer config: its settings are read as main_ppo's overrides over verl's ppo_trainer defaults",)
    return [Workload(source=source, document=document, name=name, fmt=FORMAT_VERL, where=where, base_dir=base_dir,
                     words=("python3", "-m", "verl.trainer.main_ppo", *words), notes=notes,
                     blocker=blocker if isinstance(rollout, Mapping) or blocker else None)]
