"""Talking to git. `status` runs the user's own git (standard library only, the hot paths use it);
`query` and `odb` use pygit2, off the hot paths: queries of the object database, and sync's objects."""
