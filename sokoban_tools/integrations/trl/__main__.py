"""``python -m sokoban_tools.integrations.trl``: GRPO with TRL on the training boards, verl-agent's text turn.

    python -m sokoban_tools.integrations.trl --model MODEL --log runs/trl.jsonl [options]

``MODEL`` is a Hub id, a folder or a ``.gguf`` file (:mod:`.models`). The defaults are
verl-agent's Sokoban launcher's (:class:`~.run.RunSettings`); every setting a run changes
is in the run manifest beside the log, and those of validation that are not verl-agent's
are named there. Train, validate on the schedule, log every episode; then
``python -m sokoban_tools score LOG``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ...extras import install_advice
from ...help_text import Parser
from ...protocol import VALIDATION_SIZE
from ..served.client import Decoding
from .run import RunSettings

DEFAULTS = RunSettings(model="")


def parser() -> Parser:
    d = DEFAULTS
    p = Parser(prog="python -m sokoban_tools.integrations.trl", description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="a Hub id, a folder or a .gguf file (recorded as the weights)")
    p.add_argument("--revision", default=None, help="the Hub revision (commit) of --model, recorded")
    p.add_argument("--log", required=True, type=Path, help="the episode log to write (a new one); its manifest "
                   "goes beside it")
    p.add_argument("--output-dir", type=Path, default=None, help="TRL's output folder (default: LOG.trl/)")
    p.add_argument("--method", default="TRL-GRPO", help="the method label of the records (default: TRL-GRPO)")
    p.add_argument("--run", default=None, help="the run label of the records (default: seed<SEED>)")
    integers = (("updates", "trainer.total_training_steps"), ("groups_per_update", "data.train_batch_size"),
                ("group_size", "env.rollout.n"), ("horizon", "env.max_steps"),
                ("history_length", "env.history_length"), ("max_prompt_length", "data.max_prompt_length"),
                ("test_freq", "trainer.test_freq"), ("seed", "env.seed"))
    for name, key in integers:
        p.add_argument(f"--{name.replace('_', '-')}", type=int, default=getattr(d, name),
                       help=f"{key} (default: {getattr(d, name)})")
    p.add_argument("--max-completion-length", type=int, default=d.training.max_tokens,
                   help=f"tokens a training answer may have, data.max_response_length (default: {d.training.max_tokens})")
    p.add_argument("--validation-max-tokens", type=int, default=d.validation.max_tokens,
                   help=f"tokens a validation answer may have (default: {d.validation.max_tokens})")
    p.add_argument("--validation-boards", type=int, default=VALIDATION_SIZE,
                   help=f"validate on the first N boards only: a quick look, NOT the protocol (default: {VALIDATION_SIZE})")
    p.add_argument("--no-val-before-train", action="store_true", help="no validation pass at update 0")
    p.add_argument("--learning-rate", type=float, default=d.learning_rate, help=f"(default: {d.learning_rate})")
    p.add_argument("--beta", type=float, default=d.beta, help=f"KL coefficient, 0 for no reference model "
                   f"(default: {d.beta}, kl_loss_coef)")
    p.add_argument("--invalid-action-penalty", type=float, default=d.invalid_action_penalty_coef,
                   help=f"subtracted from a turn's reward when its answer is invalid, 0 for none "
                        f"(default: {d.invalid_action_penalty_coef})")
    p.add_argument("--micro-batches", type=int, default=1, help="micro-batches an update accumulates (default: 1)")
    p.add_argument("--no-gradient-checkpointing", action="store_true", help="keep activations instead of recomputing "
                   "them: faster for a small model (default: checkpointing, enable_gradient_checkpointing)")
    p.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"), help="weights (default: float32)")
    p.add_argument("--threads", type=int, default=None, help="torch's CPU threads (default: torch's choice; "
                   "1 is fastest per CPU-second on a CPU)")
    p.add_argument("--dataset-dir", type=Path, default=None, help="a local copy of the dataset repository "
                   "(default: the clone, else the pinned release on the Hub)")
    return p


def settings_of(args) -> RunSettings:
    d = DEFAULTS
    return RunSettings(
        model=args.model, revision=args.revision, history_length=args.history_length, horizon=args.horizon,
        max_prompt_length=args.max_prompt_length, group_size=args.group_size, groups_per_update=args.groups_per_update,
        updates=args.updates, seed=args.seed, invalid_action_penalty_coef=args.invalid_action_penalty,
        val_before_train=not args.no_val_before_train, test_freq=args.test_freq,
        training=Decoding(d.training.temperature, d.training.top_p, d.training.top_k, True, args.max_completion_length),
        validation=Decoding(d.validation.temperature, d.validation.top_p, d.validation.top_k, d.validation.do_sample,
                            args.validation_max_tokens),
        validation_boards=args.validation_boards, learning_rate=args.learning_rate, beta=args.beta)


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    try:
        settings = settings_of(args)
    except ValueError as err:
        p.error(str(err))
    try:
        import torch
        from trl import GRPOTrainer
    except ImportError as missing:
        print(f"error: {missing.name} is not installed: {install_advice('trl')}", file=sys.stderr)
        return 1
    if args.threads is not None:
        torch.set_num_threads(args.threads)

    from .dataset import training_dataset
    from .models import trainable_model
    from .rollout import VerlAgentRollout, verl_agent_reward
    from .run import TrlRun, grpo_config
    from .schedule import ValidationSchedule

    model, tokenizer = trainable_model(args.model, args.revision, args.dtype)
    config = grpo_config(settings, args.output_dir or args.log.with_name(args.log.name + ".trl"), args.micro_batches,
                         use_cpu=not torch.cuda.is_available(), bf16=args.dtype == "bfloat16",
                         gradient_checkpointing=not args.no_gradient_checkpointing)
    with TrlRun(args.log, settings, args.method, args.run or f"seed{args.seed}", dataset_dir=args.dataset_dir) as run:
        dataset, boards = training_dataset(run.training_rows(), settings.groups_per_update, settings.group_size,
                                           settings.seed, settings.updates, settings.history_length)
        trainer = GRPOTrainer(model=model, reward_funcs=verl_agent_reward, args=config, train_dataset=dataset,
                              processing_class=tokenizer, rollout_func=VerlAgentRollout(run, boards),
                              callbacks=[ValidationSchedule(run)])
        trainer.train()
    print(f"{trainer.state.global_step} updates of {args.model}; log {args.log}")
    print(f"score it: python -m sokoban_tools score {args.log}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
