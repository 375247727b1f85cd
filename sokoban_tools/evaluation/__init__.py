"""Stage 6, score: statistics, scoring and comparing episode logs, their
pictures, the exact random-policy baselines and the worked example's policies.
"""
