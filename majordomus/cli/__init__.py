"""The command-line adapters: one module per command (group), each with `main(argv) -> int`.

`majordomus.main` imports only the module of the command it runs. The hot commands (`checkpoint`,
`check`, `hook`, `help`) parse with `argv.Spec`; the others declare their options in `params`, which reads
the usual forms itself and hands anything else (`--help`, a usage error) to click through `clickrun`.
Nothing else imports click.
"""
