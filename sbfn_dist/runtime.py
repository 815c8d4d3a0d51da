"""Where a trial runs and how its randomness is derived (shared by every task)."""

import torch


def resolve_device(device: str) -> str:
    """"auto": CUDA when present, else the CPU."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def fold_seed(seed: int, fold: int) -> int:
    """Every random choice of a fold or split derives from (config seed, fold)."""
    return int(seed) * 10_007 + int(fold)
