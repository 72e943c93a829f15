"""`kvplan check`: deployment files -> deployments (readers/) -> verdicts (judge.py) -> a report (report.py) in
text, json, markdown or junit (formats.py). run.py ties them together."""
