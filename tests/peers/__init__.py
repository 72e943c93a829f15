"""Peers: other tools whose numbers kvplan is checked against (transformers on the meta device)."""
