"""The rules the hot paths need, in the standard library only (a test holds it to that).

Every other layer uses these too, so that each rule is written once: where the repository is
(`dotgit`), which task is active (`active`), what an id or a record name may be (`names`), how much of
stdin is read (`stdin`), how a state file is opened (`safeio`) and the configuration's defaults
(`limits`). Nothing here imports pygit2, click or yaml, or any majordomus module but `errors`.
"""
