"""A --resume compares the data a sweep was created on with the data now (sweep.json's stamps,
sbfn_dist.catalog.contents_stamp): a folder of images whose contents changed is
refused, as a changed CSV is (issue 48, item 2)."""

import numpy as np
import pytest
from PIL import Image

from sbfn_dist import catalog
from sbfn_dist.errors import SbfnError
from sweeps.engine.checks import refuse_another_sweep
from sweeps.engine.common.store import ResultStore
from sweeps.engine.plan.planning import SweepOptions


def same_size_images(folder, classes=("a", "b"), n=4):
    """BMPs of one size (a BMP's size is its shape's), a class's pixels dark, the other's
    light."""
    for c, name in enumerate(classes):
        (folder / name).mkdir(parents=True)
        for i in range(n):
            pixels = np.full((8, 8), 40 + 160 * c + i, dtype=np.uint8)
            Image.fromarray(pixels).save(folder / name / f"{i}.bmp")


def swap(one, other):
    one_bytes, other_bytes = one.read_bytes(), other.read_bytes()
    one.write_bytes(other_bytes)
    other.write_bytes(one_bytes)


def a_sweep_created_on(tmp_path, name: str, stamp: str) -> ResultStore:
    store = ResultStore(str(tmp_path / "results" / "pets"))
    store.create()
    store.write_spec({"trial_ids": ["t"], "data": {name: stamp}})
    return store


def test_images_swapped_between_class_folders_are_a_change_a_resume_refuses(tmp_path):
    """Five same-size BMPs swapped between two class folders kept every path and size, the
    folder's stamp then: the resume ranked splits of both contents together (exit 0)."""
    folder = tmp_path / "pets"
    same_size_images(folder)
    name = f"folder:{folder}"
    store = a_sweep_created_on(tmp_path, name, catalog.contents_stamp(name))
    opts = SweepOptions(name="pets", storage=str(tmp_path / "results"), resume=True)
    refuse_another_sweep(store, opts, ["t"], {name: catalog.contents_stamp(name)})  # unchanged
    swap(folder / "a" / "0.bmp", folder / "b" / "0.bmp")
    with pytest.raises(SbfnError, match=f"--resume: {name} has changed since the sweep at"):
        refuse_another_sweep(store, opts, ["t"], {name: catalog.contents_stamp(name)})


def test_a_folder_stamp_recorded_before_its_bytes_counted_is_compared_as_it_was_made(tmp_path):
    """A sweep recorded by an older version stamped a folder by paths and sizes: its resume on
    the same folder goes on (not "has changed"), and one on a folder with a file added stops."""
    folder = tmp_path / "pets"
    same_size_images(folder)
    name = f"folder:{folder}"
    older = catalog.contents_stamp(name, recorded="0123456789abcdef")
    assert not older.startswith(catalog.FOLDER_STAMP)
    assert catalog.contents_stamp(name).startswith(catalog.FOLDER_STAMP)
    store = a_sweep_created_on(tmp_path, name, older)
    opts = SweepOptions(name="pets", storage=str(tmp_path / "results"), resume=True)
    refuse_another_sweep(store, opts, ["t"], {name: catalog.contents_stamp(name)})
    Image.fromarray(np.zeros((8, 8), dtype=np.uint8)).save(folder / "a" / "new.bmp")
    with pytest.raises(SbfnError, match="has changed since the sweep"):
        refuse_another_sweep(store, opts, ["t"], {name: catalog.contents_stamp(name)})
