"""The in-memory image data set every image loader returns (images.py: the built-in sets;
image_files.py: your npz: and folder: images), below both so that neither imports the other's
loader."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ImageData:
    name: str                # a catalog name, or npz:PATH / folder:PATH (absolute)
    x: np.ndarray            # uint8 (N, C, H, W), read-only: official train then official test images
                             # (your float images: float32)
    y: np.ndarray            # int64 (N,), read-only
    classes: tuple           # the label of each code: names (str), or your npz's integers
    n_official_train: int    # the first rows are the official training set
    notes: str = ""


def frozen(data: ImageData) -> ImageData:
    # The arrays are cached and shared by every caller in the process, so nobody may edit them.
    data.x.flags.writeable = False
    data.y.flags.writeable = False
    return data


def brief(exc: Exception) -> str:
    """A loader's exception in one line (its type and first 300 characters), for a DataError."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}"
