"""`make run`: the whole product in one process tree on this machine, with no external service."""
