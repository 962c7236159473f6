#!/usr/bin/env python3
"""The training iteration of loom_cuda_mlp_bench in PyTorch, for comparison on the same GPU.

Unity's MLP: 16 dense layers of 8192 with ReLU, no bias, batch 256, float32, MSE loss, plain SGD
(forward, backward, optimizer step), timed with torch.cuda events over warm iterations.

    python3 bench/cuda/torch_mlp.py [--layers N] [--width N] [--batch N] [--warmup N] [--iters N] [--tf32]
"""
import argparse
import sys

import torch

from torch_timing import milliseconds_per_step, sgd_step


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layers", type=int, default=16)
    parser.add_argument("--width", type=int, default=8192)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--tf32", action="store_true", help="allow TF32 tensor cores (default: full FP32)")
    args = parser.parse_args()

    if not torch.cuda.is_available():
        print("torch_mlp: skipped: torch.cuda.is_available() is false")
        return 0
    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    device = torch.device("cuda")
    torch.manual_seed(0)

    layers = []
    for _ in range(args.layers):
        layers += [torch.nn.Linear(args.width, args.width, bias=False), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.rand(args.batch, args.width, device=device) * 2 - 1
    target = torch.rand(args.batch, args.width, device=device) * 2 - 1

    iteration = sgd_step(optimizer, lambda: torch.nn.functional.mse_loss(model(x), target))
    ms = milliseconds_per_step(iteration, args.warmup, args.iters)

    # Forward, weight gradients and input gradients (none for the first layer's input).
    flops = 2.0 * args.batch * args.width * args.width * (3 * args.layers - 1)
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    print(f"MLP: {args.layers} dense layers of {args.width}, batch {args.batch}, float32, ReLU, MSE loss, SGD, "
          f"matmul: {'TF32' if args.tf32 else 'FP32'}")
    print(f"training iteration: {ms:.3f} ms/iteration, {flops / (ms * 1e-3) / 1e12:.1f} TFLOP/s "
          f"({args.iters} warm iterations timed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
