"""One module per command, each with `register(app)`; kvplan/cli/entry.py lists them and imports them lazily."""
