"""kvplan over the wire: `kvplan serve` (an HTTP API and the calculator page, app.py and page/) and `kvplan mcp` (a
Model Context Protocol server, mcp.py). Both answer through calls.py, which runs the Python API (kvplan/api/) on JSON
arguments, and describe their arguments with schema.py. The servers' packages are extras (kvplan[serve],
kvplan[mcp]); nothing else in kvplan imports this package."""
