"""The CPU training-step comparison for loom_train_bench: the same MLP (4 dense layers of 1024
without bias, ReLU between them), batch 256, float32, softmax cross-entropy, SGD lr 0.01, one
process, timed the same way (median of 10 steps after 2 warm-up steps).

    /usr/bin/python3 bench/torch/mlp_cpu.py [--threads N]   (Debian: apt-get install python3-torch)
"""
import argparse
import statistics
import time

import torch


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads (loom_train_bench runs Eigen on one)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    batch, width, layers = 256, 1024, 4
    weights = [torch.nn.Parameter(torch.empty(width, width).uniform_(-width ** -0.5, width ** -0.5)) for _ in range(layers)]
    optimizer = torch.optim.SGD(weights, lr=0.01)
    x = torch.empty(batch, width).uniform_(-1, 1)
    target = torch.randint(0, width, (batch,))
    seconds = []
    for step in range(12):
        start = time.perf_counter()
        h = x
        for i, w in enumerate(weights):
            h = h @ w
            if i + 1 < layers:
                h = torch.relu(h)
        loss = torch.nn.functional.cross_entropy(h, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step >= 2:
            seconds.append(time.perf_counter() - start)
    median = statistics.median(seconds)
    flops = 3 * 2 * batch * width * width * layers
    print(f"PyTorch {torch.__version__}, {args.threads} thread(s): {median * 1e3:.1f} ms per step, "
          f"{batch / median:,.0f} samples/s, {flops / median / 1e9:.0f} GFLOP/s")


if __name__ == "__main__":
    main()
