"""The build pipeline: generate -> select -> verify -> baselines and example -> publish.

It writes every file of ``fairness/``, the card and its pictures from seeds,
and runs from a clone only: the wheel ships the product (the rules, the row
format, the runtime, scoring) and not this package. The product never imports
it; it imports the product.
"""
