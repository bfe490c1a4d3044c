"""Images for the Vision Transformer (paper A section 5.6): Fashion-MNIST from its Debian package.

Fashion-MNIST (Xiao, Rasul & Vollgraf 2017; MIT licence, Copyright 2017 Zalando SE) holds
28x28 grey photos of clothes in 10 classes: the official 60,000 training and 10,000 test
images, as gzipped IDX files in Debian's `dataset-fashion-mnist` (pinned below). They are
read from /usr/share/datasets/fashion-mnist where the package is installed; else its .deb is
fetched once with `apt-get download` (no root needed) into `.cache/packages/`, checked against
its SHA-256, and the four files are taken out in Python (a .deb is an `ar` archive holding
data.tar.xz). `vision.images_dir` points at any other folder of the same four files (the
fingerprint's probe uses one of synthetic images).

Splits: `train` is the training images but the last twelfth, `val` that last twelfth (5,000
of 60,000, fixed), `test` the test images. `ImageBatches(...).batch(step)` gives (images,
labels) like `cod.data.loader.TokenBatches`: step s holds the global samples s * batch_size
..., visited in a fresh random order each epoch, so a batch depends only on (seed, step), and
rank r of a DDP run takes its slice of the global batch. Pixels are scaled to [0, 1] and
standardised with the mean and standard deviation of the training split's pixels.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

from cod.config import VisionConfig
from cod.data.packages import CACHE, PackageError

PACKAGE, VERSION = "dataset-fashion-mnist", "0.0~git20200523.55506a9-1"  # Debian bookworm, architecture all
SHA256 = "39e172fe32dd318ebb3e512220c3beea2fa47d7e20bab348fb4e0922d6beefc0"  # of the .deb
INSTALLED = Path("/usr/share/datasets/fashion-mnist")
FILES = {  # split of the source -> (images, labels)
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}
VAL_SHARE = 12  # the last 1/12 of the training images (5,000 of 60,000) validate


# ----------------------------------------------------------------------------- IDX files


def decode_idx(data: bytes) -> np.ndarray:
    """An IDX array of unsigned bytes: magic 00 00 08 ndim, ndim big-endian uint32 sizes, the data."""
    if len(data) < 4 or data[:2] != b"\0\0" or data[2] != 0x08:
        raise ValueError(f"not an IDX file of unsigned bytes (magic {data[:4].hex()}; allowed: 000008 + ndim)")
    ndim = data[3]
    shape = tuple(int(n) for n in np.frombuffer(data, ">u4", count=ndim, offset=4))
    body = np.frombuffer(data, np.uint8, offset=4 + 4 * ndim)
    if body.size != np.prod(shape):
        raise ValueError(f"IDX header says shape {shape} ({np.prod(shape)} bytes), the file holds {body.size}")
    return body.reshape(shape).copy()  # writable, as torch.from_numpy wants


def read_idx(path: Path) -> np.ndarray:
    return decode_idx(gzip.decompress(Path(path).read_bytes()))


def write_idx(path: Path, array: np.ndarray) -> None:
    """Write a uint8 array as a gzipped IDX file."""
    header = bytes([0, 0, 0x08, array.ndim]) + np.asarray(array.shape, ">u4").tobytes()
    Path(path).write_bytes(gzip.compress(header + np.ascontiguousarray(array, np.uint8).tobytes(), mtime=0))


# ----------------------------------------------------------------------------- the package


def images_dir(vision: VisionConfig) -> Path:
    """The folder of the four IDX files: vision.images_dir, the installed package, or the fetched one."""
    if vision.images_dir:
        return Path(vision.images_dir)
    if all((INSTALLED / name).is_file() for pair in FILES.values() for name in pair):
        return INSTALLED
    folder = CACHE / f"{PACKAGE}-{VERSION}"
    if not (folder / ".complete").exists():
        fetch(folder)
    return folder


def fetch(folder: Path) -> None:
    """Download the pinned .deb, check it and extract the IDX files into `folder`. The work happens
    in a private temporary folder renamed into place at the end, so runs started side by side may
    fetch at once: the first rename wins and the others keep its result."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    command = f"apt-get download {PACKAGE}={VERSION}"
    print(f"{PACKAGE} is not installed: fetching it with `{command}` into {folder}", flush=True)
    with tempfile.TemporaryDirectory(dir=folder.parent) as tmp:
        try:
            done = subprocess.run(command.split(), cwd=tmp, capture_output=True, text=True)
            problem = done.stderr.strip()[-300:]
        except FileNotFoundError:
            problem = "no apt-get on this machine"
        debs = sorted(Path(tmp).glob(f"{PACKAGE}_*.deb"))
        if not debs:
            raise PackageError(f"Fashion-MNIST is neither installed ({INSTALLED}) nor fetched ({problem}): run "
                               f"`{command}` on a machine with Debian bookworm's package lists and pass the "
                               f"unpacked IDX files as vision.images_dir, or `apt-get install {PACKAGE}={VERSION}`")
        digest = hashlib.sha256(debs[0].read_bytes()).hexdigest()
        if digest != SHA256:
            raise PackageError(f"{debs[0].name} has SHA-256 {digest}, not the pinned {SHA256}")
        unpacked = Path(tmp) / "unpacked"
        unpacked.mkdir()
        extract_deb(debs[0], unpacked)
        (unpacked / ".complete").touch()
        if folder.exists() and not (folder / ".complete").exists():
            shutil.rmtree(folder, ignore_errors=True)  # left half-written by an interrupted fetch
        try:
            os.rename(unpacked, folder)
        except OSError:
            if not (folder / ".complete").exists():  # not another process's finished fetch
                raise


def extract_deb(deb: Path, folder: Path) -> None:
    """Write the IDX files of FILES from `deb` (an ar archive whose data.tar.* holds them) into `folder`."""
    data, wanted = deb.read_bytes(), {name for pair in FILES.values() for name in pair}
    if not data.startswith(b"!<arch>\n"):
        raise PackageError(f"{deb} is not a .deb (ar) archive")
    position = 8
    while position + 60 <= len(data):  # each member: a 60-byte header (name, ..., size at 48:58), its data, padding
        name, size = data[position:position + 16].decode().strip().rstrip("/"), int(data[position + 48:position + 58])
        body = data[position + 60:position + 60 + size]
        position += 60 + size + size % 2
        if name.startswith("data.tar"):
            with tarfile.open(fileobj=io.BytesIO(body)) as tar:  # detects xz (Debian's) and gz
                members = [m for m in tar.getmembers() if m.isfile() and Path(m.name).name in wanted]
                for member in members:
                    (folder / Path(member.name).name).write_bytes(tar.extractfile(member).read())
            if {Path(m.name).name for m in members} == wanted:
                return
    raise PackageError(f"{deb} lacks some of {sorted(wanted)}")


# ----------------------------------------------------------------------------- splits and batches


@dataclass
class Images:
    """One split: pixels (N, C, H, W) uint8, labels (N,) int64, and the training split's pixel
    mean and standard deviation (on the [0, 1] scale) that standardise them."""

    pixels: np.ndarray
    labels: np.ndarray
    mean: float
    std: float

    def __len__(self) -> int:
        return len(self.labels)

    def tensors(self, rows: np.ndarray | slice) -> tuple[torch.Tensor, torch.Tensor]:
        """(images (n, C, H, W) standardised, in the default float dtype; labels (n,) int64)."""
        x = torch.from_numpy(self.pixels[rows]).to(torch.get_default_dtype()) / 255
        return (x - self.mean) / self.std, torch.from_numpy(self.labels[rows])


def load_images(vision: VisionConfig) -> dict[str, Images]:
    """The train, val and test splits of vision.dataset."""
    folder = images_dir(vision)
    arrays = {}
    for split, (image_file, label_file) in FILES.items():
        pixels, labels = read_idx(folder / image_file), read_idx(folder / label_file).astype(np.int64)
        if pixels.size != len(labels) * vision.channels * vision.side**2 or labels.max() >= vision.n_classes:
            raise ValueError(f"{folder / image_file} and {label_file} are not {len(labels)} images of "
                             f"{vision.channels}x{vision.side}x{vision.side} pixels in {vision.n_classes} classes")
        arrays[split] = pixels.reshape(len(labels), vision.channels, vision.side, vision.side), labels
    (pixels, labels), n_val = arrays["train"], len(arrays["train"][1]) // VAL_SHARE
    train = pixels[:-n_val]
    counts = np.bincount(train.ravel(), minlength=256)  # exact moments of the training pixels
    values = np.arange(256) / 255
    mean = float(counts @ values / counts.sum())
    std = float(np.sqrt(counts @ (values - mean) ** 2 / counts.sum()))
    return {"train": Images(train, labels[:-n_val], mean, std),
            "val": Images(pixels[-n_val:], labels[-n_val:], mean, std),
            "test": Images(*arrays["test"], mean, std)}


class ImageBatches:
    """Deterministic training batches: `.batch(step) -> (images, labels)`, (batch_size // world_size, C, H, W)."""

    def __init__(self, images: Images, batch_size: int, seed: int, rank: int = 0, world_size: int = 1):
        if batch_size % world_size:
            raise ValueError(f"batch_size {batch_size} is not divisible by world_size {world_size}")
        self.images, self.batch_size, self.seed = images, batch_size, seed
        self.rows = slice(rank * batch_size // world_size, (rank + 1) * batch_size // world_size)
        self._order = lru_cache(maxsize=2)(self._epoch_order)

    def _epoch_order(self, epoch: int) -> np.ndarray:
        """The image indices in the order epoch `epoch` visits them."""
        return np.random.default_rng([self.seed, epoch]).permutation(len(self.images))

    def batch(self, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        samples = np.arange(step * self.batch_size, (step + 1) * self.batch_size)[self.rows]
        epochs, positions = np.divmod(samples, len(self.images))
        rows = np.empty_like(samples)
        for epoch in np.unique(epochs):
            here = epochs == epoch
            rows[here] = self._order(int(epoch))[positions[here]]
        return self.images.tensors(rows)
