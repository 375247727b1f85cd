"""Pipeline stage 5, publish: the dataset card, its pages and pictures, the release
pinning, the benchmarks and the original verl-agent code they compare with.
"""
