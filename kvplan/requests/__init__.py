"""The one request builder, above the engines: a user's values (command-line flags, deployment keys, API
arguments) validated into the engine-neutral EngineRequest (kvplan/engines/api.py). build.py builds them."""
