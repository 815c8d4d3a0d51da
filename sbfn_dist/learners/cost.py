"""What a member stack costs: its parameters and its forward FLOPs per example (the records'
`n_params_members`, `flops_per_example`)."""

import torch


def count_parameters(model: torch.nn.Module, trainable_only: bool = False) -> int:
    return int(sum(p.numel() for p in model.parameters() if p.requires_grad or not trainable_only))


def flops_per_example(model: torch.nn.Module, example_input) -> float:
    """Forward-pass FLOPs (torch.utils.flop_counter; a multiply-add counts 2) / batch size.
    The model runs once in eval mode under no_grad; its train/eval mode is restored."""
    # Imported here for start-up cost: flop_counter loads triton (~0.15 CPU-s), and only stacks
    # without a formula of their own (CNNs; MLPs count theirs) are counted this way.
    from torch.utils.flop_counter import FlopCounterMode
    inputs = example_input if isinstance(example_input, (tuple, list)) else (example_input,)
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad(), FlopCounterMode(display=False) as counter:
            model(*inputs)
    finally:
        model.train(was_training)
    return counter.get_total_flops() / inputs[0].shape[0]
