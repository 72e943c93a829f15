"""Where the Hugging Face hub cache and kvplan's own cache are, from the environment as it is now. `kvplan check`
confines its reads to both (check/run.py) without loading the cache's reader (model/hf_cache.py) or the Hub client.
Pure: reads the environment, touches no file."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """The Hugging Face hub cache this process would use (the environment as it is now)."""
    env = os.environ
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if env.get(name):
            return Path(env[name]).expanduser()
    if env.get("HF_HOME"):
        return Path(env["HF_HOME"]).expanduser() / "hub"
    base = Path(env["XDG_CACHE_HOME"]).expanduser() if env.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "huggingface" / "hub"


def kvplan_cache_dir() -> Path:
    """Where kvplan keeps what it read from the Hub (model/hub.py: weight bytes per commit), beside the Hugging Face
    cache: `kvplan check` confines its reads to both (check/run.py), without loading the Hub client.
    $KVPLAN_CACHE_DIR, else $XDG_CACHE_HOME/kvplan, else ~/.cache/kvplan."""
    if os.environ.get("KVPLAN_CACHE_DIR"):
        return Path(os.environ["KVPLAN_CACHE_DIR"]).expanduser()
    base = Path(os.environ["XDG_CACHE_HOME"]).expanduser() if os.environ.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "kvplan"
