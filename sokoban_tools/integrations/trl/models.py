"""Any GGUF file or Hub model as a model a ``Trainer`` trains, with its tokenizer.

transformers reads a GGUF file (``from_pretrained(folder, gguf_file=name)``, the ``gguf``
package) by dequantising its tensors into an ordinary model, but marks the model as
quantized, and the ``Trainer`` refuses to fine-tune "a purely quantized model". So
:func:`trainable_model` rebuilds the model from its config and copies the dequantised
weights in, which leaves no quantization mark. A Hub id or a folder of safetensors loads
as it is (``revision`` pins a Hub commit); a vision-language model that transformers loads
only as image-text-to-text (Qwen2.5-VL) loads as that, and plays the text turn. Either way the weights are ``dtype`` (float32 by
default, as TRL loads a model by name) and the tokenizer pads on the left, as TRL wants.

    model, tokenizer = trainable_model("path/to/SmolLM2-135M-Instruct.Q4_1.gguf")
    model, tokenizer = trainable_model("Qwen/Qwen2.5-VL-3B-Instruct", dtype="bfloat16")
"""

from __future__ import annotations

from pathlib import Path

GGUF_SUFFIX = ".gguf"


def trainable_model(source: str | Path, revision: str | None = None, dtype="float32"):
    """``(model, tokenizer)`` of ``source``, a ``.gguf`` file, a folder or a Hub id; see the module docstring."""
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText, AutoTokenizer

    dtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
    path = Path(source)
    if path.suffix == GGUF_SUFFIX:
        if not path.is_file():
            raise FileNotFoundError(f"the GGUF file {path} does not exist: give the path of a .gguf file")
        where = {"pretrained_model_name_or_path": str(path.parent), "gguf_file": path.name}
        tokenizer = AutoTokenizer.from_pretrained(**where)
        dequantised = AutoModelForCausalLM.from_pretrained(**where, dtype=dtype)
        model = AutoModelForCausalLM.from_config(dequantised.config, dtype=dtype)
        model.load_state_dict(dequantised.state_dict(), strict=True)
        model.generation_config = dequantised.generation_config
    else:
        tokenizer = AutoTokenizer.from_pretrained(str(source), revision=revision)
        try:
            model = AutoModelForCausalLM.from_pretrained(str(source), revision=revision, dtype=dtype)
        except ValueError:  # "Unrecognized configuration class": no causal-LM class for this model type
            model = AutoModelForImageTextToText.from_pretrained(str(source), revision=revision, dtype=dtype)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer
