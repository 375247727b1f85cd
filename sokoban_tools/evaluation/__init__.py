"""Score: statistics, scoring and comparing episode logs, and their pictures.
"""
