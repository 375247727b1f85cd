"""The formats a run writes and a reader reads: board rows and files and their
checked loading, episode records and logs, and run manifests. The runtime writes
them, scoring and every integration read them; this package imports neither.
"""
