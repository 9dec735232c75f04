#!/usr/bin/python3
"""The float32 peer of lowbit-train: PyTorch on the same networks, data and batch sizes.

scripts/train-bench --peers runs it next to lowbit-train (doc/training.md, "Results") to compare
test accuracy and seconds per epoch. It loads the same datasets as train/data.cc and splits them
the same way: Iris (train/datasets/iris.csv) and the 8x8 digits (train/datasets/digits.csv.gz)
go through StratifiedSplit (20% of each class in test) and Standardize, both mirrored here from
train/data.cc (splitmix64 in 64-bit integer arithmetic, the same Fisher-Yates shuffles, so a seed
picks the same examples as lowbit-train's); Fashion-MNIST is its own 60000/10000 split
(/usr/share/datasets/fashion-mnist), pixels / 256.

The network, --arch in lowbit-train's two notations: layer widths (784-128-10), nn.Linear layers
with ReLU between them (none after the last); or comma-separated layers on the data's images
(Fashion-MNIST 1x28x28, digits 1x8x8; Iris has none), fed as NCHW tensors of the same values:
    convKxK:C[/sS][/pP]  nn.Conv2d to C channels, kernel K, stride S (1), padding P (K // 2),
                         then ReLU
    poolK, maxpoolK      nn.MaxPool2d(K)
    avgpoolK             nn.AvgPool2d(K)
    flatten              nn.Flatten, implied before a linear layer that follows an image
    linear:N             nn.Linear to N, then ReLU unless it is the last layer, which must be
                         linear:<classes>
e.g. conv3x3:16,pool2,conv3x3:32,pool2,linear:10. PyTorch's default initialization seeded by
--seed; SGD with momentum 0.9; MSE against one-hot targets (nn.MSELoss, the mean over the batch
and the classes) or nn.CrossEntropyLoss. Each epoch visits the training set in a torch.randperm
order seeded by --seed (lowbit-train shuffles with its own generator).
The learning rates by dataset (DEFAULTS below), each the best mean test accuracy over
train-bench's seeds in a small sweep: iris 0.01 (of 0.01, 0.05 and 0.1), digits 0.05 (of 0.01,
0.02, 0.03, 0.05 and 0.1), fashion-mnist 0.01 (of 0.005, 0.01 and 0.02 on 784-128-10; the
784-200-100-50-10 network uses it unswept; on conv3x3:16,pool2,conv3x3:32,pool2,linear:10 it is
also the best of 0.005, 0.01, 0.02 and 0.05 after 10 epochs, swept on seed 1 alone to save the
shared machine's time: 89.07, 90.37, 90.22 and 88.62%).

Only the epochs' training steps are timed (shuffle, forward, backward, update; the evaluations
between epochs are not), as lowbit-train's "training seconds". Like lowbit-train it ends with
    training seconds: X (Y per epoch)
    test accuracy: NN.NN%
after a line "threads: N", the threads the process has once training is over.
Uses Debian's python3-torch and python3-numpy: run it with /usr/bin/python3. That torch does its
matrix products through libblas.so.3, whichever BLAS provides it (Debian's alternatives, or
LD_LIBRARY_PATH): it prints the one it loaded on its "blas:" line. The reference BLAS (libblas3)
is an order of magnitude slower than OpenBLAS there; train-bench pins OpenBLAS. Its convolutions
run in the oneDNN (MKL-DNN) built into torch, not in the BLAS.
"""

import argparse
import gzip
import math
import os
import re
import sys
import time

# Imported by import_numerics once --threads is known: numpy and torch both load libblas.so.3,
# and OpenBLAS takes its thread count from the environment when it loads.
np = None
torch = None
nn = None

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATASETS = os.path.join(ROOT, "train", "datasets")
FASHION_MNIST = "/usr/share/datasets/fashion-mnist"

# lowbit-train's kDefaults (train/lowbit_train.cc) and the float learning rate for each dataset.
DEFAULTS = {
    "iris": {"arch": "4-8-8-3", "loss": "mse", "epochs": 500, "batch": 8, "lr": 0.01},
    "digits": {"arch": "64-64-10", "loss": "ce", "epochs": 50, "batch": 16, "lr": 0.05},
    "fashion-mnist": {"arch": "784-128-10", "loss": "ce", "epochs": 20, "batch": 64, "lr": 0.01},
}

# The image shape (channels, height, width) of the datasets that have one, for conv and pool
# layers.
IMAGE_SHAPES = {"digits": (1, 8, 8), "fashion-mnist": (1, 28, 28)}

# --- StratifiedSplit and Standardize, as train/data.cc does them ---

MASK64 = (1 << 64) - 1


class SplitMix64:
    """train/data.cc's SplitMix64: Python integers masked to 64 bits act as std::uint64_t."""

    def __init__(self, seed):
        self.state = seed & MASK64

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        mixed = self.state
        mixed = ((mixed ^ (mixed >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        mixed = ((mixed ^ (mixed >> 27)) * 0x94D049BB133111EB) & MASK64
        return mixed ^ (mixed >> 31)

    def below(self, bound):
        """Uniform in [0, bound), rejecting draws below 2^64 mod bound."""
        rejected = ((0 - bound) & MASK64) % bound
        while True:
            draw = self.next()
            if draw >= rejected:
                return draw % bound


def shuffle(items, generator):
    """Fisher-Yates from the back, as data.cc's Shuffle."""
    for i in range(len(items), 1, -1):
        pick = generator.below(i)
        items[i - 1], items[pick] = items[pick], items[i - 1]


def round_half_away(x):
    """std::round for x >= 0 (Python's round() rounds halves to even)."""
    whole = math.floor(x)
    return whole + 1 if x - whole >= 0.5 else whole


def stratified_split_indices(labels, classes, test_fraction, seed):
    """The example indices of data.cc's StratifiedSplit: (train, test), in their order."""
    by_class = [[] for _ in range(classes)]
    for example, label in enumerate(labels):
        by_class[label].append(example)
    generator = SplitMix64(seed)
    train, test = [], []
    for examples in by_class:
        shuffle(examples, generator)
        test_count = round_half_away(test_fraction * len(examples))
        test += examples[:test_count]
        train += examples[test_count:]
    shuffle(train, generator)
    shuffle(test, generator)
    return train, test


def standardize(train, test):
    """data.cc's Standardize: mean and population deviation over train, in double; a feature
    constant over train becomes 0."""
    train64 = train.astype(np.float64)
    mean = train64.mean(axis=0)
    deviation = np.sqrt(((train64 - mean) ** 2).mean(axis=0))
    scale = np.divide(1.0, deviation, out=np.zeros_like(deviation), where=deviation > 0)
    return (((train64 - mean) * scale).astype(np.float32),
            ((test.astype(np.float64) - mean) * scale).astype(np.float32))


# --- Loading ---

def fail(message):
    sys.exit(f"train_pytorch.py: {message}")


def read_csv(path, skip_header, expected_rows):
    """Rows of features and a label after an optional header. train/data.cc checks these files
    in detail; this only refuses what would mislead: a malformed value or a wrong row count."""
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rt") as file:
            lines = [line.strip() for line in file if line.strip()]
        header = lines[0].split(",") if skip_header else None
        rows = [line.split(",") for line in (lines[1:] if skip_header else lines)]
        inputs = np.array([[float(value) for value in row[:-1]] for row in rows],
                          dtype=np.float32)
        labels = np.array([int(row[-1]) for row in rows], dtype=np.int64)
    except (OSError, ValueError, IndexError) as error:
        fail(f"{path}: {error}")
    if len(rows) != expected_rows:
        fail(f"{path}: {len(rows)} examples, expected {expected_rows}")
    return header, inputs, labels


def read_idx(path, magic, dimensions):
    try:
        with gzip.open(path, "rb") as file:
            data = file.read()
    except (OSError, EOFError) as error:
        fail(f"{path}: {error}")
    header = 4 + 4 * dimensions
    if len(data) < header:
        fail(f"{path}: truncated header")
    found = int.from_bytes(data[0:4], "big")
    if found != magic:
        fail(f"{path}: bad magic {found:#010x}, expected {magic:#010x}")
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dimensions)]
    body = np.frombuffer(data, dtype=np.uint8, offset=header)
    if body.size != math.prod(shape):
        fail(f"{path}: {body.size} bytes of data, the header says {math.prod(shape)}")
    return body.reshape(shape)


def load(data, seed):
    """(train inputs, train labels, test inputs, test labels, classes) as numpy arrays."""
    if data == "fashion-mnist":
        def pair(prefix):
            images = read_idx(os.path.join(FASHION_MNIST, f"{prefix}-images-idx3-ubyte.gz"),
                              0x00000803, 3)
            labels = read_idx(os.path.join(FASHION_MNIST, f"{prefix}-labels-idx1-ubyte.gz"),
                              0x00000801, 1)
            return images.reshape(len(images), -1).astype(np.float32) / 256.0, labels.astype(
                np.int64)
        train_x, train_y = pair("train")
        test_x, test_y = pair("t10k")
        if len(train_y) != 60000 or len(test_y) != 10000 or len(train_x) != len(train_y) or \
                len(test_x) != len(test_y):
            fail(f"{FASHION_MNIST}: expected 60000 training and 10000 test images and labels")
        return train_x, train_y, test_x, test_y, 10
    if data == "iris":
        header, inputs, labels = read_csv(os.path.join(DATASETS, "iris.csv"), True, 150)
        classes = len(header) - 2
    else:
        _, inputs, labels = read_csv(os.path.join(DATASETS, "digits.csv.gz"), False, 1797)
        classes = 10
    train, test = stratified_split_indices(labels.tolist(), classes, 0.2, seed)
    train_x, test_x = standardize(inputs[train], inputs[test])
    return train_x, labels[train], test_x, labels[test], classes


# --- The network ---

LAYER_FORMS = "convKxK:C[/sS][/pP], poolK, maxpoolK, avgpoolK, flatten or linear:N"


def parse_layer(token):
    """A token of the layer notation as (token, kind, numbers): conv (channels, kernel, stride,
    padding), maxpool or avgpool (size), flatten () or linear (outputs)."""
    match = re.fullmatch(r"conv([0-9]+)x([0-9]+):([0-9]+)((?:/[sp][0-9]+)*)", token)
    if match:
        kernel, kernel_width, channels = (int(number) for number in match.groups()[:3])
        options = {option[0]: int(option[1:]) for option in match[4].split("/")[1:]}
        if kernel != kernel_width:
            raise ValueError(f"{token}: the kernel must be square")
        if len(options) != match[4].count("/"):
            raise ValueError(f"{token}: the stride or the padding is given twice")
        stride = options.get("s", 1)
        if min(kernel, channels, stride) < 1:
            raise ValueError(f"{token}: the kernel, channels and stride must be 1 or more")
        return token, "conv", (channels, kernel, stride, options.get("p", kernel // 2))
    match = re.fullmatch(r"(max|avg)?pool([0-9]+)", token)
    if match:
        if int(match[2]) < 1:
            raise ValueError(f"{token}: the pool size must be 1 or more")
        return token, (match[1] or "max") + "pool", (int(match[2]),)
    if token == "flatten":
        return token, "flatten", ()
    match = re.fullmatch(r"linear:([0-9]+)", token)
    if match:
        if int(match[1]) < 1:
            raise ValueError(f"{token}: the outputs must be 1 or more")
        return token, "linear", (int(match[1]),)
    raise ValueError(f"{token!r} is not a layer ({LAYER_FORMS})")


def parse_arch(arch):
    """--arch as (input width, layers), layers as parse_layer's. Layer widths (4-8-8-3) are linear
    layers whose input width is the first; the layer notation, which has letters, takes its
    input from the data (None)."""
    if not re.search("[a-z]", arch):
        try:
            widths = [int(width) for width in arch.split("-")]
        except ValueError:
            raise ValueError(f"must be widths joined by '-', e.g. 4-8-8-3, or layers joined by "
                             f"',' ({LAYER_FORMS}), got {arch!r}")
        if len(widths) < 2 or min(widths) < 1:
            raise ValueError(f"needs at least two widths of 1 or more, got {arch!r}")
        return widths[0], [(str(width), "linear", (width,)) for width in widths[1:]]
    layers = [parse_layer(token) for token in arch.split(",")]
    if layers[-1][1] != "linear":
        raise ValueError(f"the last layer must be linear:<classes>, got {arch!r}")
    return None, layers


def build(layers, input_shape):
    """The nn.Sequential of `layers` on inputs of `input_shape`, (features,) or (channels, height,
    width): ReLU after each conv and each linear layer but the last, a Flatten before a linear
    layer on an image. ValueError names a layer that has no output or no image to work on."""
    modules = []
    shape = input_shape
    for position, (token, kind, numbers) in enumerate(layers):
        if kind == "linear":
            if len(shape) == 3:
                modules.append(nn.Flatten())
                shape = (math.prod(shape),)
            modules.append(nn.Linear(shape[0], numbers[0]))
            shape = numbers
            if position < len(layers) - 1:
                modules.append(nn.ReLU())
            continue
        if len(shape) != 3:
            raise ValueError(f"{token} follows a flat output (of linear or flatten)")
        channels, height, width = shape
        if kind == "flatten":
            modules.append(nn.Flatten())
            shape = (channels * height * width,)
            continue
        if kind == "conv":
            outputs, kernel, stride, padding = numbers
            modules += [nn.Conv2d(channels, outputs, kernel, stride, padding), nn.ReLU()]
            shape = (outputs, *((size + 2 * padding - kernel) // stride + 1
                                for size in (height, width)))
        else:
            modules.append((nn.MaxPool2d if kind == "maxpool" else nn.AvgPool2d)(numbers[0]))
            shape = (channels, height // numbers[0], width // numbers[0])
        if min(shape[1:]) < 1:
            raise ValueError(f"{token} has no output on a {channels}x{height}x{width} input")
    return nn.Sequential(*modules)


# --- Training ---


def accuracy(model, inputs, labels):
    """In slices of `slice_size` examples: a convolution's output on all 60000 Fashion-MNIST
    images at once would take gigabytes."""
    slice_size = 1000
    with torch.no_grad():
        correct = sum((model(inputs[first:first + slice_size]).argmax(dim=1) ==
                       labels[first:first + slice_size]).sum().item()
                      for first in range(0, len(labels), slice_size))
    return 100.0 * correct / len(labels)


def checked(convert, noun, accepts, rule):
    """An argparse type: `convert` the text, then require `accepts`; the errors say the rule."""

    def parse(text):
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {noun}, got {text!r}")
        if not accepts(value):
            raise argparse.ArgumentTypeError(f"must be {rule}, got {text!r}")
        return value

    return parse


positive_int = checked(int, "an integer", lambda value: value >= 1, "at least 1")
seed_int = checked(int, "an integer", lambda value: 0 <= value <= 2147483647,
                   "in [0, 2147483647]")
positive_float = checked(float, "a number", lambda value: value > 0 and math.isfinite(value),
                         "a positive number")
momentum_float = checked(float, "a number", lambda value: 0 <= value < 1, "in [0, 1)")


def parse_arguments():
    parser = argparse.ArgumentParser(
        prog="train_pytorch.py",
        description="Trains lowbit-train's networks in PyTorch float32 (SGD with momentum) on "
                    "the same data and splits, and prints the training seconds and the test "
                    "accuracy as lowbit-train does. Unset options take the dataset's defaults "
                    "(lowbit-train's, and the learning rate: " +
                    ", ".join(f"{d} {v['lr']}" for d, v in DEFAULTS.items()) + ").")
    parser.add_argument("--data", choices=sorted(DEFAULTS), default="iris")
    parser.add_argument("--arch", help="layer widths, e.g. 4-8-8-3, or layers, e.g. "
                                       "conv3x3:16,pool2,conv3x3:32,pool2,linear:10")
    parser.add_argument("--loss", choices=["mse", "ce"])
    parser.add_argument("--epochs", type=positive_int)
    parser.add_argument("--batch", type=positive_int)
    parser.add_argument("--seed", type=seed_int, default=1,
                        help="picks the Iris and digits split, the initial weights and the "
                             "epochs' order (default 1)")
    parser.add_argument("--lr", type=positive_float, help="the learning rate")
    parser.add_argument("--momentum", type=momentum_float, default=0.9, help="default 0.9")
    parser.add_argument("--threads", type=positive_int, default=1,
                        help="torch.set_num_threads (default 1)")
    arguments = parser.parse_args()
    defaults = DEFAULTS[arguments.data]
    for name in ("arch", "loss", "epochs", "batch", "lr"):
        if getattr(arguments, name) is None:
            setattr(arguments, name, defaults[name])
    try:
        arguments.input_width, arguments.layers = parse_arch(arguments.arch)
    except ValueError as error:
        parser.error(f"argument --arch: {error}")
    # Any layer but linear works on the data's images.
    arguments.images = any(kind != "linear" for _, kind, _ in arguments.layers)
    if arguments.images and arguments.data not in IMAGE_SHAPES:
        parser.error(f"argument --arch: {arguments.data} has no image shape for conv, pool and "
                     f"flatten layers (only {' and '.join(sorted(IMAGE_SHAPES))} have one), got "
                     f"{arguments.arch!r}")
    return parser, arguments


def import_numerics(threads):
    """Imports numpy and torch with `threads` threads for torch's own kernels and for the BLAS
    both call (Debian's numpy and torch call libblas.so.3, whichever BLAS that is: OpenBLAS
    reads OPENBLAS_NUM_THREADS when it loads, an OpenMP build OMP_NUM_THREADS)."""
    global np, torch, nn
    os.environ["OPENBLAS_NUM_THREADS"] = str(threads)
    os.environ["OMP_NUM_THREADS"] = str(threads)
    import numpy as np
    import torch
    from torch import nn
    torch.set_num_threads(threads)


def os_threads():
    """The number of threads this process has."""
    return len(os.listdir("/proc/self/task"))


def loaded_blas():
    """The BLAS libraries this process has mapped, from /proc/self/maps."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if len(line.split()) >= 6}
    except OSError:
        return "unknown"
    blas = sorted(path for path in paths if "blas" in os.path.basename(path))
    return ", ".join(blas) if blas else "none"


def main():
    parser, arguments = parse_arguments()
    import_numerics(arguments.threads)
    torch.manual_seed(arguments.seed)

    train_x, train_y, test_x, test_y, classes = load(arguments.data, arguments.seed)
    outputs = arguments.layers[-1][2][0]
    if arguments.input_width is not None and (arguments.input_width != train_x.shape[1] or
                                              outputs != classes):
        parser.error(f"argument --arch: must start with the data's {train_x.shape[1]} features "
                     f"and end with its {classes} classes, got {arguments.arch!r}")
    if outputs != classes:
        parser.error(f"argument --arch: the last layer must be linear:{classes}, the data's "
                     f"classes, got {arguments.arch!r}")
    if arguments.images:
        train_x = train_x.reshape(-1, *IMAGE_SHAPES[arguments.data])
        test_x = test_x.reshape(-1, *IMAGE_SHAPES[arguments.data])
    train_x, train_y = torch.from_numpy(train_x), torch.from_numpy(train_y)
    test_x, test_y = torch.from_numpy(test_x), torch.from_numpy(test_y)
    if arguments.loss == "mse":
        train_targets = nn.functional.one_hot(train_y, classes).float()
        loss_function = nn.MSELoss()
    else:
        train_targets = train_y
        loss_function = nn.CrossEntropyLoss()

    try:
        model = build(arguments.layers, tuple(train_x.shape[1:]))
    except ValueError as error:
        parser.error(f"argument --arch: {error}")
    optimizer = torch.optim.SGD(model.parameters(), lr=arguments.lr,
                                momentum=arguments.momentum)
    order_generator = torch.Generator().manual_seed(arguments.seed)
    examples = len(train_y)
    batch = arguments.batch
    epochs = arguments.epochs
    report_every = epochs // 25 if epochs > 50 else 1

    print(f"pytorch {torch.__version__}, {torch.get_num_threads()} thread(s), "
          f"{arguments.data} {arguments.arch} {arguments.loss} batch {batch} lr {arguments.lr} "
          f"momentum {arguments.momentum}")
    print(f"blas: {loaded_blas()}")
    print(f"{'epoch':>5} {'loss':>10} {'train%':>7} {'test%':>7} {'seconds':>8}")
    training_seconds = 0.0
    test_accuracy = 0.0
    for epoch in range(1, epochs + 1):
        start = time.perf_counter()
        order = torch.randperm(examples, generator=order_generator)
        loss_sum = 0.0
        for first in range(0, examples, batch):
            indices = order[first:first + batch]
            optimizer.zero_grad()
            loss = loss_function(model(train_x[indices]), train_targets[indices])
            loss.backward()
            optimizer.step()
            loss_sum += loss.item() * len(indices)
        seconds = time.perf_counter() - start
        training_seconds += seconds
        if epoch % report_every != 0 and epoch != epochs:
            continue
        train_accuracy = accuracy(model, train_x, train_y)
        test_accuracy = accuracy(model, test_x, test_y)
        print(f"{epoch:5d} {loss_sum / examples:10.5f} {train_accuracy:7.2f} "
              f"{test_accuracy:7.2f} {seconds:8.3f}")
    print(f"threads: {os_threads()}")
    print(f"training seconds: {training_seconds:.3f} ({training_seconds / epochs:.4f} per epoch)")
    print(f"test accuracy: {test_accuracy:.2f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
