from kvplan.cli.process import run

run()
