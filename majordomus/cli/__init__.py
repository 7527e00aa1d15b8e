"""The command-line adapters: one module per command (group), each with `main(argv) -> int`.

`majordomus.main` imports only the module of the command it runs. The hot commands (`checkpoint`,
`check`, `hook`) parse with argparse or by hand and never import click; the rest use click through
`common`. Nothing below this layer imports click.
"""
