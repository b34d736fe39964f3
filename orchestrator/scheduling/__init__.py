"""Running jobs: their ids (sweep), the Ray driver (scheduler), the supervised worker, Ray sessions, progress."""
