"""The formats a run writes and a reader reads: board rows and files and their
checked loading, episode records and logs, run manifests, and a run's files opened
once for its readers. The runtime writes them, scoring and every integration read
them; this package imports neither.
"""
