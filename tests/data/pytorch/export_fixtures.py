#!/usr/bin/env python3
"""Exports the PyTorch models whose outputs `loom run` must reproduce, with their weights.

For each model this writes, next to this script: NAME.onnx (the model exported with its weights),
NAME.input.npy (a fixed input) and NAME.output.npy (PyTorch's output for it, in eval mode). The
tests read these files and need no PyTorch; run this script again (with Debian's python3-torch and
python3-numpy) only to change the models.

  python3 tests/data/pytorch/export_fixtures.py
"""
import os

import numpy as np
import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = 13  # below 17, so LayerNorm is exported as the nine nodes the import rules fuse


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class SmallCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn1(self.conv1(x))))
        x = torch.relu(self.bn2(self.conv2(x)))
        x = torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1)
        return self.fc(x)


def encoder_layer():
    return nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, dropout=0.0, activation="gelu", batch_first=True)


def export(name, model, x):
    model.eval()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):  # running statistics other than the fresh 0 and 1
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 1.5)
            if isinstance(m, (nn.BatchNorm2d, nn.LayerNorm)):  # scales and shifts other than the fresh 1 and 0
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)
    # With gradients on, the encoder layer runs (and exports) its plain path, not its fused kernel.
    y = model(x).detach()
    torch.onnx.export(model, (x,), os.path.join(HERE, name + ".onnx"), opset_version=OPSET, input_names=["x"], output_names=["y"],
                      do_constant_folding=True)
    np.save(os.path.join(HERE, name + ".input.npy"), x.numpy())
    np.save(os.path.join(HERE, name + ".output.npy"), y.numpy())
    print(name, tuple(x.shape), "->", tuple(y.shape))


def main():
    torch.manual_seed(0)
    export("mlp", Mlp(), torch.randn(8, 16))
    export("small_cnn", SmallCnn(), torch.randn(2, 3, 8, 8))
    export("encoder_layer", encoder_layer(), torch.randn(2, 5, 16))


if __name__ == "__main__":
    main()
