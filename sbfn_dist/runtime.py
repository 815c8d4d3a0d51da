"""Where a trial runs and how its randomness is derived (shared by every task). torch is imported
where a device is asked about: a sweep's driver plans tabular trials without loading it."""

from sbfn_dist.errors import ConfigError


def resolve_device(device: str) -> str:
    """"auto": CUDA when present, else the CPU; "cuda" only where CUDA is present."""
    if device not in ("auto", "cuda"):
        return device
    import torch
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        # torch would fail later, deep inside training, with a message about its build
        raise ConfigError("device", device, "auto or cpu: this machine has no CUDA GPU "
                          "(a sweep gives its trials GPUs with --num-gpus / --gpus-per-trial)")
    return device


def fold_seed(seed: int, fold: int) -> int:
    """Every random choice of a fold or split derives from (config seed, fold)."""
    return int(seed) * 10_007 + int(fold)


class torch_threads:
    """Run a block with n intra-op threads, restoring the caller's setting afterwards."""

    def __init__(self, n: int):
        self.n = n

    def __enter__(self):
        import torch
        self.saved = torch.get_num_threads()
        torch.set_num_threads(self.n)

    def __exit__(self, *exc):
        import torch
        torch.set_num_threads(self.saved)
