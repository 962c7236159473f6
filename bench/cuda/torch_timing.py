"""What the PyTorch comparisons share: one SGD training step and its timing on the GPU."""
from typing import Callable

import torch


def sgd_step(optimizer: torch.optim.Optimizer, loss_of: Callable[[], torch.Tensor]) -> Callable[[], None]:
    """A step: clear the gradients, run forward and backward of `loss_of`, update."""

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        loss_of().backward()
        optimizer.step()

    return step


def milliseconds_per_step(step: Callable[[], None], warmup: int, iters: int) -> float:
    """The mean time of `iters` steps after `warmup` untimed ones, by CUDA events."""
    for _ in range(warmup):
        step()
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        step()
    stop.record()
    torch.cuda.synchronize()
    return start.elapsed_time(stop) / iters
