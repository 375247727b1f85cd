"""How to install an optional extra, said so that it works where the user is.

sokoban-fairness is on no package index, so pip finds no extra by the package's name.
In a clone an extra comes with the clone's editable install
(``pip install -e '.[plot]'`` in its folder); beside an installed wheel, the extra's
packages install by name. Their requirements are pyproject.toml's, which a test
keeps equal to :data:`EXTRAS`.
"""

from __future__ import annotations

# extra -> its requirements, as pyproject.toml's optional-dependencies give them
EXTRAS = {
    "plot": ("matplotlib>=3.8",),
    "evaluate": ("openai>=1.0",),
    "inspect": ("inspect-ai==0.3.285",),
    "train": ("stable-baselines3==2.9.2", "torch==2.13.0", "gymnasium>=1.0"),
    "sweep": ("ray>=2.9", "stable-baselines3==2.9.2", "torch==2.13.0", "gymnasium>=1.0"),
    "trl": ("trl==1.16.0", "transformers>=5.2,<6", "gguf==0.19.0", "torch==2.13.0"),
}


def install_advice(extra: str, quote: str = "") -> str:
    """The commands that install ``extra`` in a clone and beside a wheel, each between
    ``quote`` (a backtick on the pages)."""
    packages = " ".join(f"'{requirement}'" for requirement in EXTRAS[extra])
    return f"{quote}pip install -e '.[{extra}]'{quote} in a clone, {quote}pip install {packages}{quote} with the wheel"
