"""A LeNet-style CNN on synthetic 28x28 digits, in the shape of the classic MNIST example:
Conv2d/ReLU/MaxPool2d/Dropout2d/Linear, log_softmax + nll_loss, Adadelta + StepLR,
a DataLoader over a TensorDataset, an eval pass with argmax accuracy."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset

from _common import parse, share_init, write_log


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.dropout1 = nn.Dropout(0.0)
        self.dropout2 = nn.Dropout(0.0)
        self.fc1 = nn.Linear(2304, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x)
        return F.log_softmax(self.fc2(x), dim=1)


def main():
    args = parse(epochs=2, batch_size=32, lr=1.0)
    rng = np.random.default_rng(0)
    images = rng.standard_normal((256, 1, 28, 28)).astype(np.float32)
    labels = rng.integers(0, 10, 256)
    images[np.arange(256), 0, labels * 2 + 4, 4:24] += 3.0  # a learnable stroke per class
    train = TensorDataset(torch.from_numpy(images), torch.from_numpy(labels))
    loader = DataLoader(train, batch_size=args.batch_size, shuffle=False)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Net().to(device)
    share_init(torch, [model], args.init)
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
    losses = []
    for _ in range(args.epochs):
        model.train()
        for data, target in loader:
            data, target = data.to(device), target.to(device)
            optimizer.zero_grad()
            loss = F.nll_loss(model(data), target)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        scheduler.step()
    model.eval()
    correct = 0
    with torch.no_grad():
        for data, target in loader:
            pred = model(data).argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    write_log(args.log, losses, accuracy=correct / len(train))


if __name__ == "__main__":
    main()
