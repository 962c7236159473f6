#!/usr/bin/env python3
"""Training steps of two zoo models in PyTorch eager, with the shapes `loom train` gives them, for
comparison with `loom train --backend cuda` on the same GPU.

  alexnet     the zoo's AlexNet (torchvision's layer sizes, 224x224 input), cross-entropy loss
  bert_layer  the zoo's bert_large with -p layers=1: word, position and token-type embeddings,
              a layer norm, one post-norm encoder layer (16 heads, GELU feed-forward of 4x) and the
              tanh pooler; MSE loss on the first output, the encoder's states, as
              `loom train --loss mse` takes it (the pooler runs but gets no gradient)

Dropout is the identity, as the zoo's spec defines it. Plain SGD, float32 with full FP32 matmuls,
timed with torch.cuda events over warm steps.

    python3 bench/cuda/torch_models.py alexnet|bert_layer [--batch N] [--warmup N] [--iters N]
"""
import argparse

import torch
from torch import nn

from torch_timing import milliseconds_per_step, sgd_step


def alexnet(classes: int) -> nn.Module:
    def conv(cin, cout, k, stride, pad):
        return [nn.Conv2d(cin, cout, k, stride, pad), nn.ReLU()]

    return nn.Sequential(
        *conv(3, 64, 11, 4, 2), nn.MaxPool2d(3, 2),
        *conv(64, 192, 5, 1, 2), nn.MaxPool2d(3, 2),
        *conv(192, 384, 3, 1, 1),
        *conv(384, 256, 3, 1, 1),
        *conv(256, 256, 3, 1, 1), nn.MaxPool2d(3, 2),
        nn.Flatten(),
        nn.Linear(256 * 6 * 6, 4096), nn.ReLU(),
        nn.Linear(4096, 4096), nn.ReLU(),
        nn.Linear(4096, classes))


class BertOneLayer(nn.Module):
    def __init__(self, hidden=1024, heads=16, vocab=30522, positions=512):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.position = nn.Embedding(positions, hidden)
        self.token_type = nn.Embedding(2, hidden)
        self.norm = nn.LayerNorm(hidden)
        self.layer = nn.TransformerEncoderLayer(hidden, heads, 4 * hidden, dropout=0.0, activation="gelu",
                                                batch_first=True, norm_first=False)
        self.pooler = nn.Linear(hidden, hidden)

    def forward(self, ids, positions, segments):
        x = self.norm(self.word(ids) + self.position(positions) + self.token_type(segments))
        x = self.layer(x)
        return x, torch.tanh(self.pooler(x[:, 0]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", choices=["alexnet", "bert_layer"])
    parser.add_argument("--batch", type=int, help="default: the zoo's (alexnet 256, bert_large 4)")
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--iters", type=int, default=4)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("torch_models: skipped: torch.cuda.is_available() is false")
        return 0
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = torch.device("cuda")
    torch.manual_seed(0)

    if args.model == "alexnet":
        batch = args.batch or 256
        model = alexnet(1000).to(device)
        x = torch.rand(batch, 3, 224, 224, device=device) * 2 - 1
        target = torch.randint(0, 1000, (batch,), device=device)

        def loss_of():
            return nn.functional.cross_entropy(model(x), target)
    else:
        batch = args.batch or 4
        model = BertOneLayer().to(device)
        ids = torch.randint(0, 30522, (batch, args.seq), device=device)
        positions = torch.arange(args.seq, device=device).expand(batch, args.seq)
        segments = torch.randint(0, 2, (batch, args.seq), device=device)
        states_target = torch.rand(batch, args.seq, 1024, device=device) * 2 - 1

        def loss_of():
            states, _ = model(ids, positions, segments)
            return nn.functional.mse_loss(states, states_target)

    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)

    ms = milliseconds_per_step(sgd_step(optimizer, loss_of), args.warmup, args.iters)
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    print(f"training step ({args.model}, batch {batch}, float32, SGD): {ms:.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
