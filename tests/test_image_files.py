"""Your own images as a data set (sbfn_dist/data/image_files.py): `folder:PATH` and `npz:PATH`
work where a data set name does -- run_trial, a sweep file run by `python -m sweeps run`, the
report; a folder is decoded once and cached on disk; `npz:` of CIFAR-10's arrays trains exactly
what `cifar10` trains; bad input is refused in one line when the sweep is planned."""

import json
import os
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from sbfn_dist import run_trial
from sbfn_dist.catalog import contents_stamp
from sbfn_dist.data import image_files
from sbfn_dist.data.images import load_images
from sbfn_dist.errors import ConfigError, DataError
from sbfn_dist.folds import check_data, make_parts
from sbfn_dist.learners.cnn import MIN_SIZE
from sbfn_dist.settings.config import TrialConfig
from sbfn_dist.settings.fields import field
from tests.conftest import shared_data_dir
from tests.sweep_helpers import a_ray

pytestmark = pytest.mark.timeout(600)
COUNTS = {"stripes_across": 400, "stripes_down": 350, "diagonals": 300}   # 1,050 PNGs, 16x16
SIDE = 16
FAST = {"n_members": 2, "ensemble": "cnn", "epochs": 1, "folds": 1, "device": "cpu",
        "combiners": ["logit_mean", "base_avg"]}


def pattern(kind: int, rng, side: int = SIDE) -> np.ndarray:
    """A gray image of stripes across, stripes down or diagonals (a random phase), in noise:
    the class is in the pattern, not in the brightness."""
    i, j = np.mgrid[:side, :side] + rng.integers(0, 4)
    stripes = [i % 4 < 2, j % 4 < 2, (i + j) % 4 < 2][kind]
    return np.clip(stripes * 120 + rng.normal(60, 40, (side, side)), 0, 255).astype(np.uint8)


def write_folder(root: Path, counts: dict, side: int = SIDE, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    for kind, (name, n) in enumerate(counts.items()):
        (root / name).mkdir(parents=True)
        for k in range(n):
            Image.fromarray(pattern(kind % 3, rng, side)).save(root / name / f"{k:04d}.png")
    return root


@pytest.fixture(scope="module", autouse=True)
def own_cache(tmp_path_factory):
    """Decoded folders go to this module's cache dir, not the user's."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SBFN_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        yield


@pytest.fixture(scope="module")
def pngs(tmp_path_factory) -> Path:
    return write_folder(tmp_path_factory.mktemp("images") / "patterns", COUNTS)


def fresh():
    """Forget what this process read, as a new process (a Ray worker) would."""
    image_files._decoded.cache_clear()
    image_files._read_npz.cache_clear()


# ------------------------------------------------------------------ a folder through run_trial
def test_an_ensemble_on_a_folder_of_pngs_beats_the_majority_class_clearly(pngs):
    records = pd.DataFrame(run_trial({**FAST, "dataset": f"folder:{pngs}", "n_test": 300,
                                      "image_size": 12}))
    majority = max(COUNTS.values()) / sum(COUNTS.values())        # 0.38
    assert (records["status"] == "ok").all()
    assert records["accuracy"].min() > majority + 0.3
    # the records say what was used: the folder, its size after resizing, its split
    assert set(records["dataset"]) == {f"folder:{pngs}"}
    assert set(records["image_size"]) == {12}
    assert set(records["n_train"]) == {sum(COUNTS.values()) - 300}


def test_a_folder_is_decoded_once_and_read_from_the_cache_until_a_file_changes(pngs,
                                                                               monkeypatch):
    decoded = []
    real = image_files._decode
    monkeypatch.setattr(image_files, "_decode", lambda p, s: decoded.append(p) or real(p, s))
    fresh()
    first = load_images(f"folder:{pngs}", image_size=10)
    assert len(decoded) == sum(COUNTS.values())
    assert first.x.shape == (sum(COUNTS.values()), 1, 10, 10) and first.x.dtype == np.uint8
    assert first.classes == tuple(sorted(COUNTS))

    fresh()
    again = load_images(f"folder:{pngs}", image_size=10)
    assert len(decoded) == sum(COUNTS.values())           # nothing decoded: the disk cache
    np.testing.assert_array_equal(again.x, first.x)
    np.testing.assert_array_equal(again.y, first.y)

    some = pngs / "diagonals" / "0000.png"
    os.utime(some, ns=(some.stat().st_atime_ns, some.stat().st_mtime_ns + 10**9))
    fresh()
    load_images(f"folder:{pngs}", image_size=10)
    assert len(decoded) == 2 * sum(COUNTS.values())       # a changed file: a new entry


def test_a_file_rewritten_to_its_size_with_its_old_mtime_is_decoded_again(tmp_path):
    """cp -p / rsync -t / touch -d give a rewritten file its old mtime; a BMP of the same
    shape has the same size: only the ctime tells the cache the pixels changed."""
    rng = np.random.default_rng(2)
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        for k in range(2):
            Image.fromarray(pattern(k, rng, 8)).save(tmp_path / name / f"{k}.bmp")
    fresh()
    first = load_images(f"folder:{tmp_path}")
    some = tmp_path / "a" / "0.bmp"
    before = some.stat()
    Image.fromarray(255 - np.asarray(Image.open(some))).save(some)
    os.utime(some, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert some.stat().st_size == before.st_size and some.stat().st_mtime_ns == before.st_mtime_ns
    fresh()
    again = load_images(f"folder:{tmp_path}")
    changed = again.x != first.x
    assert changed.any() and changed.reshape(len(changed), -1).any(1).sum() == 1


def test_gray_and_colour_images_in_one_folder_are_read_as_rgb(tmp_path):
    rng = np.random.default_rng(1)
    (tmp_path / "gray").mkdir()
    (tmp_path / "colour").mkdir()
    for k in range(3):
        Image.fromarray(pattern(0, rng, 8)).save(tmp_path / "gray" / f"{k}.png")
        Image.fromarray(rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)).save(
            tmp_path / "colour" / f"{k}.png")
    data = load_images(f"folder:{tmp_path}")
    assert data.x.shape == (6, 3, 8, 8)
    gray = data.x[data.y == data.classes.index("gray")]
    assert (gray == gray[:, :1]).all()                     # one channel, three times


# 16-bit PNGs became constant images (PIL cuts them to 255 when it makes them 8-bit), float
# TIFFs in [0, 1] all 0: a sweep trained on them at chance, silently (issue 32).
def test_images_of_more_than_8_bits_keep_their_values(tmp_path):
    rng = np.random.default_rng(4)
    arrays = {"a": rng.integers(0, 2**16, (3, 8, 8)).astype(np.uint16),
              "b": rng.integers(0, 2**16, (3, 8, 8)).astype(np.uint16)}
    for name, images in arrays.items():
        (tmp_path / "deep" / name).mkdir(parents=True)
        for k, image in enumerate(images):
            Image.fromarray(image).save(tmp_path / "deep" / name / f"{k}.png")
        (tmp_path / "float" / name).mkdir(parents=True)
        for k, image in enumerate(images):
            Image.fromarray(image.astype(np.float32) / 2**16).save(
                tmp_path / "float" / name / f"{k}.tif")
    expected = np.concatenate([arrays["a"], arrays["b"]])[:, None]
    deep, floats = (load_images(f"folder:{tmp_path}/{kind}") for kind in ("deep", "float"))
    assert deep.x.dtype == np.float32 and floats.x.dtype == np.float32
    np.testing.assert_array_equal(deep.x, expected)
    np.testing.assert_allclose(floats.x, expected / 2**16, rtol=1e-7)   # float32 round trip
    Image.fromarray(pattern(0, rng, 8)).save(tmp_path / "deep" / "a" / "8bit.png")
    with pytest.raises(DataError, match=r"mixes 8-bit images \(a/8bit.png\) with images of "
                                        r"more bits \(a/0.png\)"):
        load_images(f"folder:{tmp_path}/deep")


# A class folder holding `loop -> ..` made 40 noise PNGs 1,640 images, b's relabelled a, copies
# on both sides of the split: a sweep scored 0.9878 on pure noise (issue 32).
LINKS = [   # (case, the link, where it points, what the one line names)
    ("a loop to the data set", "a/loop", "..", "a/loop is a link to {root}, inside"),
    ("a link to another class", "a/more", "../b", "a/more is a link to {root}/b, inside"),
    ("a class folder linked to another", "c", "a", "c is a link to {root}/a, inside"),
    ("a link above the data set", "a/up", "../..", "a/up is a link to {above}, above"),
    ("a file linked twice", "a/x.png", "../b/0000.png", "a/x.png and b/0000.png are one"),
    ("a link to nothing", "a/y.png", "gone.png", "a/y.png is a link to {root}/a/gone.png, "
                                                 "which does not exist"),
]


@pytest.mark.parametrize("link, target, says", [pytest.param(*c[1:], id=c[0]) for c in LINKS])
def test_a_link_that_would_read_images_twice_is_refused_in_one_line(tmp_path, link, target,
                                                                    says):
    root = write_folder(tmp_path / "set" / "noise", {"a": 3, "b": 3}, side=8)
    os.symlink(target, root / link)
    with pytest.raises(DataError) as refused:
        check_data([{**FAST, "dataset": f"folder:{root}"}])      # before Ray, as a sweep plans
    message = str(refused.value)
    assert says.format(root=root, above=tmp_path / "set") in message and "\n" not in message
    assert image_files.count_images(f"folder:{root}") is None    # --smoke: loading says why


def test_a_folder_is_listed_as_imagefolder_lists_it(tmp_path):
    """Nested folders, upper-case extensions, a file of another kind: torchvision's own
    listing, in its order (the images' order is the data set's, its splits' too)."""
    from torchvision.datasets.folder import IMG_EXTENSIONS, find_classes, make_dataset
    rng = np.random.default_rng(6)
    for rel in ("a/1.png", "a/x/2.png", "a/x/y/3.PNG", "a/x-1/5.png", "b/6.png", "b/b2/7.png"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(pattern(0, rng, 8)).save(tmp_path / rel, format="PNG")
    (tmp_path / "b" / "notes.txt").write_text("not an image")
    theirs = make_dataset(str(tmp_path), find_classes(tmp_path)[1], extensions=IMG_EXTENSIONS)
    ours = image_files._listing(tmp_path)[0]
    assert [(f[0], f[1]) for f in ours] == [(os.path.relpath(p, tmp_path), c) for p, c in theirs]


def test_a_class_folder_linked_to_images_elsewhere_is_read_once(tmp_path):
    elsewhere = write_folder(tmp_path / "elsewhere", {"c": 4}, side=8, seed=5)
    root = write_folder(tmp_path / "set", {"a": 3, "b": 3}, side=8)
    os.symlink(elsewhere / "c", root / "c")
    data = load_images(f"folder:{root}")
    assert data.classes == ("a", "b", "c") and np.bincount(data.y).tolist() == [3, 3, 4]


# ------------------------------------------------------------------ arrays
def test_npz_arrays_in_any_layout_give_the_same_images(tmp_path):
    rng = np.random.default_rng(2)
    hwc = rng.integers(0, 256, (30, 8, 8, 3), dtype=np.uint8)
    labels = np.array(["cat", "dog", "emu"] * 10)
    np.savez(tmp_path / "hwc.npz", x=hwc, y=labels)
    np.savez(tmp_path / "chw.npz", x=hwc.transpose(0, 3, 1, 2), y=labels)
    np.savez(tmp_path / "float.npz", x=hwc[..., 0] / 255.0, y=np.arange(30) % 3)
    a, b = (load_images(f"npz:{tmp_path}/{n}.npz") for n in ("hwc", "chw"))
    np.testing.assert_array_equal(a.x, b.x)
    np.testing.assert_array_equal(a.x, hwc.transpose(0, 3, 1, 2))
    assert a.classes == ("cat", "dog", "emu") and list(a.y[:3]) == [0, 1, 2]
    grey = load_images(f"npz:{tmp_path}/float.npz")
    assert grey.x.dtype == np.float32 and grey.x.shape == (30, 1, 8, 8)
    assert grey.classes == (0, 1, 2)


# Integer labels came back as text ('0', '1', ...): a model exported from the sweep answered
# strings, and scoring it on the file's own y raised "Mix of label input types".
@pytest.mark.parametrize("y, classes", [
    (np.array([3, 1, 0, 2] * 10), (0, 1, 2, 3)),
    (np.array([3, 1, 0, 2] * 10, dtype=np.uint8), (0, 1, 2, 3)),
    (np.array([3.0, 1.0, 0.0, 2.0] * 10), (0, 1, 2, 3)),               # whole floats
    (np.array(["dog", "cat"] * 20), ("cat", "dog")),
    (np.array([b"dog", b"cat"] * 20), ("cat", "dog")),                 # bytes: their text
])
def test_an_npzs_labels_keep_their_own_values_as_classes(tmp_path, y, classes):
    x = np.random.default_rng(0).integers(0, 256, (40, 8, 8), dtype=np.uint8)
    np.savez(tmp_path / "labels.npz", x=x, y=y)
    data = load_images(f"npz:{tmp_path}/labels.npz")
    assert data.classes == classes and [type(c) for c in data.classes] == \
        [type(c) for c in classes]
    np.testing.assert_array_equal(np.asarray(data.classes)[data.y], y.astype(
        int if y.dtype.kind == "f" else str if y.dtype.kind == "S" else y.dtype))


def test_the_images_are_counted_without_decoding_them(pngs, tmp_path, monkeypatch):
    """What --smoke sizes its parts by: the count of a folder (listed) and of an npz (its
    labels); None where the data cannot be read (its loading says why)."""
    monkeypatch.setattr(image_files, "_decode", None)          # a decode would fail
    assert image_files.count_images(f"folder:{pngs}") == sum(COUNTS.values())
    np.savez(tmp_path / "parts.npz", x_train=np.zeros((7, 8, 8)), y_train=np.zeros(7),
             x_test=np.zeros((3, 8, 8)), y_test=np.zeros(3))
    assert image_files.count_images(f"npz:{tmp_path}/parts.npz") == 10
    np.save(tmp_path / "one.npy", np.zeros(3))
    for missing in (f"folder:{tmp_path}/nowhere", f"npz:{tmp_path}/nowhere.npz",
                    f"npz:{tmp_path}/one.npy"):
        assert image_files.count_images(missing) is None


CIFAR = shared_data_dir() / "cifar10" / "cifar10.npz"
needs_cifar = pytest.mark.skipif(not CIFAR.exists(), reason=f"CIFAR-10 arrays not at {CIFAR}")


@needs_cifar
def test_npz_of_cifar10s_arrays_trains_the_same_members_as_cifar10(tmp_path):
    builtin = load_images("cifar10", str(shared_data_dir()))
    split_file = load_images(f"npz:{CIFAR}")                  # x_train, y_train, x_test, y_test
    np.testing.assert_array_equal(split_file.x, builtin.x)
    assert split_file.n_official_train == builtin.n_official_train
    pooled = tmp_path / "cifar_pooled.npz"                     # x, y: HWC as CIFAR stores them
    np.savez(pooled, x=builtin.x.transpose(0, 2, 3, 1), y=builtin.y)
    del split_file
    fresh()
    # augment=True: your images get CIFAR's own recipe (4-pixel crop of 32, flips)
    trial = {**FAST, "n_train": 300, "n_test": 200, "seed": 3, "augment": True}
    ours = run_trial({**trial, "dataset": f"npz:{pooled}"})
    theirs = run_trial({**trial, "dataset": "cifar10", "data_dir": str(shared_data_dir())})
    assert [r["accuracy"] for r in ours] == [r["accuracy"] for r in theirs]
    assert [r["nll"] for r in ours] == [r["nll"] for r in theirs]
    assert "image_size" not in ours[0]                     # arrays are taken as they are
    fresh()


# ------------------------------------------------------------------ a sweep file and the report
def test_a_sweep_file_over_a_folder_runs_and_its_report_is_written(pngs, tmp_path, capsys):
    from analysis.report import write_report
    from sweeps import __main__ as sweeps_main
    sweep = tmp_path / "pngs.yaml"
    sweep.write_text(textwrap.dedent(f"""\
        dataset: folder:{pngs}
        folds: 1
        axes:
          n_members: [2]
          epsilon: [0.2, 0.6]
          ensemble: [cnn]
        settings:
          epochs: 1
          n_test: 300
          combiners: [logit_mean, base_avg]
        mlflow: false
        storage: {tmp_path / "results"}
        resources:
          num_cpus: 2
          max_concurrent: 1
        """))
    with a_ray():
        assert sweeps_main.main(["run", str(sweep)]) == 0, capsys.readouterr().err
    root = tmp_path / "results" / "patterns-pngs"   # no name: the folder's and the file's
    table = pd.read_parquet(root / "results.parquet")
    assert (table["status"] == "ok").all() and set(table["epsilon"]) == {0.2, 0.6}
    assert set(table["dataset"]) == {f"folder:{pngs}"}
    stamp = json.loads((root / "sweep.json").read_text())["data"]    # a resume compares it
    assert stamp == {f"folder:{pngs}": contents_stamp(f"folder:{pngs}")} and all(stamp.values())
    assert table["accuracy"].min() > max(COUNTS.values()) / sum(COUNTS.values()) + 0.3
    report = write_report([str(root)], out=str(tmp_path / "report"))
    text = (Path(report) / "report.md").read_text()
    # named by its folder, not the machine's path (issue 48: tests/test_newcomer_report.py)
    assert f"folder:{pngs.name}" in text and str(pngs) not in text and "logit_mean" in text


# ------------------------------------------------------------------ bad input: one line
def bad_folders(root: Path) -> dict:
    """Each a small data set with one thing wrong (the rest as a good one)."""
    rng = np.random.default_rng(3)
    made = {}
    def folder(name, counts, side=8):
        made[name] = write_folder(root / name, counts, side)
        return made[name]
    folder("one_class", {"a": 10})
    shapes = folder("mixed_shapes", {"a": 5, "b": 5})
    Image.fromarray(pattern(0, rng, 12)).save(shapes / "b" / "big.png")
    corrupt = folder("corrupt_png", {"a": 5, "b": 5})
    (corrupt / "a" / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n not an image")
    folder("one_image_of_a_class", {"a": 1, "b": 20})
    empty = folder("empty_class", {"a": 5, "b": 5})
    (empty / "c").mkdir()
    flat = root / "no_class_folders"
    flat.mkdir()
    Image.fromarray(pattern(0, rng, 8)).save(flat / "0.png")
    made["no_class_folders"] = flat
    x = rng.integers(0, 256, (40, 8, 8), dtype=np.uint8)
    for name, arrays in {"wrong_keys": {"images": x, "labels": np.arange(40) % 2},
                         "short_labels": {"x": x, "y": np.arange(30) % 2},
                         "nan_pixels": {"x": np.where(x > 250, np.nan, x / 255.0),
                                        "y": np.arange(40) % 2},
                         "unclear_channels": {"x": np.zeros((40, 3, 8, 3)),
                                              "y": np.arange(40) % 2},
                         "no_images": {"x": x[:0], "y": np.arange(0)},
                         "one_hot": {"x": x, "y": np.eye(2)[np.arange(40) % 2]},
                         "column": {"x": x, "y": (np.arange(40) % 2)[:, None]}}.items():
        np.savez(root / f"{name}.npz", **arrays)
        made[name] = root / f"{name}.npz"
    np.savez(root / "object_labels.npz", x=x, y=np.array(["a", 1] * 20, dtype=object))
    made["object_labels"] = root / "object_labels.npz"
    np.save(root / "one_array.npy", x)
    made["one_array"] = root / "one_array.npy"
    (root / "text.npz").write_text("a,b\n1,2\n")
    made["not_an_npz"] = root / "text.npz"
    return made


BAD = [   # (case, data set, extra settings, what the one line says)
    ("missing folder", "folder:{root}/nowhere", {}, "folder {root}/nowhere does not exist"),
    ("missing npz", "npz:{root}/nowhere.npz", {}, "file {root}/nowhere.npz does not exist"),
    ("a file as the folder", "folder:{text.npz}", {}, "is not a folder"),
    ("no class folders", "folder:{no_class_folders}", {}, "has no sub-folders"),
    ("an empty class folder", "folder:{empty_class}", {}, "without an image (c)"),
    ("one class", "folder:{one_class}", {}, "holds one class ('a')"),
    ("mixed shapes", "folder:{mixed_shapes}", {}, "differ in shape"),
    ("a corrupt png", "folder:{corrupt_png}", {}, "a/broken.png"),
    ("too few images of a class", "folder:{one_image_of_a_class}", {},
     "class 'a' of data set 'folder:{root}/one_image_of_a_class' has 1 image"),
    ("wrong npz keys", "npz:{wrong_keys}", {}, "holds the arrays ['images', 'labels'], not x"),
    ("labels of another length", "npz:{short_labels}", {}, "shape (30,) for 40 images"),
    ("one-hot labels", "npz:{one_hot}", {}, "shape (40, 2) for 40 images: labels are one integer "
                                            "or string per image, shape (N,); one-hot rows? save "
                                            "y.argmax(axis=1)"),
    ("labels as a column", "npz:{column}", {}, "shape (40, 1) for 40 images: labels are one "
                                               "integer or string per image, shape (N,); save "
                                               "y.ravel()"),
    ("NaN pixels", "npz:{nan_pixels}", {}, "NaN or infinite"),
    ("unclear channel axis", "npz:{unclear_channels}", {}, "axis 1 or 3 holds the channels"),
    ("not an npz", "npz:{text.npz}", {}, "cannot be read (not an npz archive)"),
    ("labels as Python objects", "npz:{object_labels}", {}, "holds Python objects"),
    ("no images (an IndexError)", "npz:{no_images}", {}, "x and y of {no_images} are empty"),
    ("one npy array", "npz:{one_array}", {}, "holds one array, not an npz archive"),
    ("image_size of arrays", "npz:{short_labels}", {"image_size": 8},
     "'image_size' = 8 is not allowed"),
]


@pytest.fixture(scope="module")
def bad(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad")
    made = bad_folders(root)
    def named(text: str) -> str:
        text = text.replace("{root}", str(root)).replace("{text.npz}", str(root / "text.npz"))
        for name, path in made.items():
            text = text.replace("{" + name + "}", str(path))
        return text
    return named


@pytest.mark.parametrize("dataset, extra, says",
                         [pytest.param(d, e, s, id=c) for c, d, e, s in BAD])
def test_bad_images_are_refused_in_one_line_when_the_sweep_is_planned(bad, dataset, extra, says):
    config = {**FAST, "dataset": bad(dataset), **extra}
    with pytest.raises((DataError, ConfigError)) as planned:
        check_data([config])                                      # what the sweep driver calls
    message = str(planned.value)
    assert bad(says) in message and "\n" not in message
    with pytest.raises((DataError, ConfigError)) as ran:
        run_trial(config)
    assert str(ran.value) == message


def test_mixed_shapes_name_the_fix_and_the_fix_works(bad):
    config = {**FAST, "dataset": bad("folder:{mixed_shapes}")}
    with pytest.raises(DataError, match=r"8x8, .*12x12\): pass image_size=N"):
        check_data([config])
    check_data([{**config, "image_size": 8}])


def test_a_sweep_of_a_bad_folder_stops_before_ray_in_one_line(bad, tmp_path, capsys):
    from sweeps import __main__ as sweeps_main
    sweep = tmp_path / "bad.yaml"
    sweep.write_text(f"name: bad\ndataset: folder:{bad('{corrupt_png}')}\nfolds: 1\n"
                     f"mlflow: false\nstorage: {tmp_path / 'results'}\n")
    assert sweeps_main.main(["run", str(sweep)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot be decoded" in err
    assert not (tmp_path / "results" / "bad" / "results.parquet").exists()


# A small folder failed on parts the user never sized ("n_val=1 leaves class 'b' without an
# image", "n_test=3 leaves class 'b' ..."): the defaults now hold every class (issue 32).
@pytest.mark.parametrize("counts, combiners", [({"a": 6, "b": 6, "c": 6}, ["sbfn_stacked"]),
                                               ({"a": 12, "b": 2}, ["logit_mean"])])
def test_a_small_folders_default_parts_hold_every_class(tmp_path, counts, combiners):
    root = write_folder(tmp_path / "small", counts, side=8)
    config = {**FAST, "dataset": f"folder:{root}", "combiners": combiners}
    check_data([config])                                        # a sweep's planning
    data = load_images(f"folder:{root}")
    [split] = make_parts(TrialConfig.from_dict(config), data)
    parts = [split.train, split.test] + ([split.val] if "sbfn_stacked" in combiners else [])
    for part in parts:
        assert sorted(set(data.y[part])) == list(range(len(counts)))


def test_image_size_allows_what_the_members_take():
    assert field("image_size").check.inner.lo == MIN_SIZE
