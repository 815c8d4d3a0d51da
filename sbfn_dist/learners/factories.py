"""Member networks of your own: a factory `build(in_channels, n_classes) -> nn.Module` mapping
(B, C, H, W) images to (B, n_classes) logits, named by its import path (`package.module:build`,
the `ensemble` setting), its M members trained as one vectorised stack with the built-ins'
epsilon-WTA objective, heads, precision and step engine (training.train_cnn_pack).
Importing a factory runs its code: trusted as any Python import is.

GenericStack holds each parameter and buffer of its M members as one tensor:

    the members' tensors joined along dim 0   member j's is rows [j*n, (j+1)*n), n its own first
                                              dim (the built-in stacks' block rule, cnn.py)
    a 0-dim buffer stacked to (M,)            BatchNorm's num_batches_tracked: one per member

so every member keeps its own buffers (BatchNorm's running statistics), which its own forward
updates in place through a view, and one optimizer over the joined tensors is M optimizers (its
update is elementwise). The strategies compute the same thing, as MemberStack's do:

    "grouped"     torch.func.vmap over functional_call (PyTorch's model-ensembling recipe): one
                  batched kernel per layer for all members (a convolution becomes a grouped one,
                  a linear layer a batched product); the buffers are batched too, so their
                  in-place updates land in each member's rows;
    "per_member"  functional_call once per member on views of the joined tensors: dense kernels,
                  faster on a CPU for large images (docs/architectures.md);
    "auto"        cnn.runs_grouped, the built-ins' rule.
"""

import copy
from itertools import chain

import torch
from torch import nn
from torch.func import functional_call, vmap
from torch.nn.parameter import is_lazy

from sbfn_dist.errors import ConfigError
from sbfn_dist.learners.cnn import STRATEGIES, check_images, runs_grouped
from sbfn_dist.user_code import import_factory, named_error

DUMMY_BATCH = 2     # the planning check's batch: BatchNorm needs two values per channel


def factory(spec):
    """The function a factory path names (imported), or `spec` itself when it is a function."""
    if callable(spec):
        return spec
    build, why = import_factory(spec)
    if why:
        raise ConfigError("ensemble", spec, why)
    return build


def factory_name(spec) -> str:
    """What records and errors call a factory: its path, or a function's module:name."""
    return spec if isinstance(spec, str) else f"{spec.__module__}:{spec.__qualname__}"


def build_factory_member(spec, in_channels: int, n_classes: int, seed: int,
                         size=None) -> nn.Module:
    """One member from the factory, initialised from `seed` as cnn.build_member initialises a
    built-in (the caller's random stream does not move); its lazy modules (nn.LazyLinear, ...)
    take their shapes from images (in_channels, *size) (_materialise)."""
    build = factory(spec)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = build(in_channels, n_classes)
        if not isinstance(net, nn.Module):
            raise ConfigError("ensemble", factory_name(spec), f"build({in_channels}, "
                              f"{n_classes}) returned a {type(net).__name__}, not a "
                              "torch.nn.Module")
        _materialise(net, spec, in_channels, size)
    return net


def _materialise(net: nn.Module, spec, in_channels: int, size) -> None:
    """Give lazy modules their shapes, as PyTorch asks before an optimizer is made: a dummy
    batch through the member. A stack joins its members' tensors when it is built, before
    any batch (issue 32: every trial failed with "Can't access the shape of an uninitialized
    parameter"). In eval mode, so that no BatchNorm statistic counts the dummy batch; the
    lazy layers draw their initial weights from the member's seeded stream, as its other
    layers did in build."""
    if not any(is_lazy(t) for _, t in _tensors(net)):
        return
    if size is None:
        raise ConfigError("ensemble", factory_name(spec), "its network has lazy modules, "
                          "whose shapes a first batch sets: build its members with the "
                          "images' size (size=(H, W))")
    x = torch.zeros(DUMMY_BATCH, in_channels, *size)
    training = net.training
    try:
        with torch.no_grad():
            net.eval()(x)
    except Exception as exc:
        raise ConfigError("ensemble", factory_name(spec), _forward_failed(x, exc)) from None
    net.train(training)


def _forward_failed(x: torch.Tensor, exc: Exception) -> str:
    return f"its forward on a batch of shape {tuple(x.shape)} failed: {named_error(exc)}"


def check_factory(spec, in_channels: int, n_classes: int, size, device) -> str:
    """Why the factory cannot give members for images (in_channels, *size) of n_classes classes
    on `device`, in one line ("" if it can): its network must have parameters and map a dummy
    batch on the device to (batch, n_classes) logits on the device, and two members stacked as
    a trial stacks them must take a training step on it."""
    try:
        net = build_factory_member(spec, in_channels, n_classes, 0, size)
    except ConfigError as exc:
        return exc.allowed
    except Exception as exc:
        return f"build({in_channels}, {n_classes}) failed: {named_error(exc)}"
    if not list(net.parameters()):
        return "the network it builds has no parameters (nothing to train)"
    x = torch.zeros(DUMMY_BATCH, in_channels, *size, device=device)
    try:
        with torch.no_grad(), torch.random.fork_rng(devices=[]):
            out = net.to(device).train()(x)
    except Exception as exc:
        return _forward_failed(x, exc)
    return _output_refusal(out, x, n_classes) or _stack_refusal(spec, x, n_classes)


def _stack_refusal(spec, x: torch.Tensor, n_classes: int) -> str:
    """Why two members stacked as a trial stacks them fail a training step on the dummy batch
    ("" if they do not): under vmap (runs_grouped: on a GPU, and small images on a CPU) a
    forward that branches on a tensor's values or calls .item() fails where the module alone
    ran, and every trial failed after its retries."""
    try:
        stack = GenericStack(spec, x.shape[1], n_classes, [0, 1], "auto", tuple(x.shape[2:]))
        with torch.random.fork_rng(devices=[]):
            stack.to(x.device).train()(x).sum().backward()
    except Exception as exc:
        how = "under torch.func.vmap, one kernel per layer for all members" \
            if runs_grouped("auto", x) else "member by member on the stack's tensors"
        return (f"two of its members, stacked as a trial trains them ({how}), fail a step on a "
                f"batch of shape {tuple(x.shape)}: {named_error(exc)} (write the forward "
                "without Python branches on tensor values or .item(): torch.where)")
    return ""


def _output_refusal(out, x: torch.Tensor, n_classes: int) -> str:
    """Why a dummy batch's output is no logits of it ("" if it is)."""
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != (len(x), n_classes) \
            or not out.is_floating_point():
        return (f"its forward maps a batch of shape {tuple(x.shape)} to {_described(out)}, "
                f"not to ({len(x)}, {n_classes}) float logits")
    if out.device != x.device:
        return f"its output is on {out.device}, not on {x.device} with its input"
    if _probabilities(out):
        return ("its forward gives probabilities (each row of its output sums to 1: a final "
                "softmax?), not logits: the training loss and the combiners apply the softmax "
                "themselves; drop the network's own")
    return ""


def _probabilities(out: torch.Tensor) -> bool:
    """Rows that are probabilities, as a final nn.Softmax makes them: trained as logits, they
    learn little and silently (log-probabilities are fine: they are logits)."""
    out = out.detach().double()
    return out.shape[1] > 1 and bool((out >= 0).all()) and \
        torch.allclose(out.sum(1), torch.ones(len(out), dtype=out.dtype, device=out.device),
                       rtol=0, atol=1e-3)


def _described(out) -> str:
    """A tensor's shape and dtype ("(2, 2), not (2, 2) float logits" hid an int64 output:
    issue 32), else the type of what came back."""
    if isinstance(out, torch.Tensor):
        return f"{tuple(out.shape)} {str(out.dtype).removeprefix('torch.')}"
    return type(out).__name__


class GenericStack(nn.Module):
    """M members built by one factory, held as joined tensors (module docstring).

    Member j starts with exactly the weights of build_factory_member(spec, ..., seeds[j], size).
    forward: (B, C_in, H, W) -> (B, M, n_classes); member(j) -> an ordinary model. `size`, the
    images' (H, W), is needed where the network has lazy modules (their shapes come from it).
    """

    def __init__(self, spec, in_channels: int, n_classes: int, seeds: list[int],
                 strategy: str = "auto", size=None):
        super().__init__()
        if strategy not in STRATEGIES:
            raise ConfigError("strategy", strategy, f"one of {STRATEGIES}")
        self.arch, self.build = factory_name(spec), factory(spec)
        self.in_channels, self.n_classes, self.strategy = in_channels, n_classes, strategy
        self.size = size
        members = [build_factory_member(self.build, in_channels, n_classes, s, size)
                   for s in seeds]
        self.n_members = len(members)
        template = copy.deepcopy(members[0]).to("meta")   # weightless: the stack supplies all
        self.__dict__["_template"] = template              # not a submodule: adds no parameters
        self.shapes = {name: t.shape for name, t in _tensors(members[0])}
        self.net = _joined(members)

    def forward(self, x):
        check_images(x, self.in_channels)
        self._template.train(self.training)
        if runs_grouped(self.strategy, x):
            run = vmap(self._call, in_dims=(0, None), randomness="different")
            return run(self.stacked(), x).transpose(0, 1)
        return torch.stack([self._call(tensors, x) for tensors in self.member_views()], 1)

    def _call(self, tensors: dict, x):
        return functional_call(self._template, tensors, (x,))

    def stacked(self) -> dict:
        """{name: (M, *member shape) view of the joined tensor}: what vmap maps over."""
        return {name: t if not self.shapes[name] else t.unflatten(0, (self.n_members, -1))
                for name, t in _tensors(self.net)}

    def member_views(self) -> list[dict]:
        """For each member j, {name: its view of the joined tensor}: writes reach the stack and
        gradients flow back into it."""
        views = [{} for _ in range(self.n_members)]
        for name, t in _tensors(self.net):
            blocks = t.unbind(0) if not self.shapes[name] else t.split(self.shapes[name][0])
            for view, block in zip(views, blocks):
                view[name] = block
        return views

    def member(self, j: int) -> nn.Module:
        """An ordinary model holding member j's current weights, on the stack's device/dtype."""
        ref = next(self.net.parameters())
        model = build_factory_member(self.build, self.in_channels, self.n_classes, 0, self.size)
        model = model.to(device=ref.device, dtype=ref.dtype).train(self.training)
        _copy(dict(_tensors(model)), self.member_views()[j])
        return model

    def load_member(self, j: int, member: nn.Module) -> None:
        """Member j's parameters and buffers := an ordinary model's."""
        _copy(self.member_views()[j], dict(_tensors(member)))


def _tensors(net: nn.Module):
    """(name, tensor) of every parameter and buffer, each tensor once."""
    return chain(net.named_parameters(), net.named_buffers())


@torch.no_grad()
def _copy(into: dict, source: dict) -> None:
    for name, t in into.items():
        t.copy_(source[name])


def _joined(members: list) -> nn.Module:
    """members[0] with each parameter and buffer replaced by all members' joined (module
    docstring); a tensor the network uses in two places (tied weights) stays one."""
    per_member = [dict(_tensors(m)) for m in members]
    net = members[0]
    joined = {}
    for name, t in _tensors(net):
        parts = [own[name].detach() for own in per_member]
        stack = torch.stack(parts) if t.ndim == 0 else torch.cat(parts)
        joined[id(t)] = nn.Parameter(stack, t.requires_grad) if isinstance(t, nn.Parameter) \
            else stack
    for module in net.modules():
        for store in (module._parameters, module._buffers):
            for key, t in store.items():
                if t is not None and id(t) in joined:
                    store[key] = joined[id(t)]
    return net
