"""Stage 7, publish: the dataset card and its pictures, the release pinning, the
benchmarks and the original verl-agent code they compare with.
"""
