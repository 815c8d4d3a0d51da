"""Files a sweep reads or writes that are cut, damaged, not text, read-only or on a full disk:
one line naming the file and the fix instead of a traceback, and nothing already stored lost
(issue 48, item 7)."""

import pytest

from sweeps import __main__ as sweeps_main

SWEEP_FILE = "dataset: diabetes\ngrid: demo\nsmoke: true\nmlflow: false\n"


def one_error_line(out) -> str:
    assert "Traceback" not in out.err + out.out, out
    [line] = [line for line in out.err.splitlines() if line.startswith("error: ")]
    return line


# ------------------------------------------------------------------------ sweep files
@pytest.mark.parametrize("content, says", [
    (SWEEP_FILE.replace("smoke", "# café\nsmoke").encode("latin-1"),
     "not UTF-8 text (byte 0xe9 at offset 34: invalid continuation byte; latin-1 or another "
     "8-bit encoding?): save it as UTF-8"),
    (SWEEP_FILE.encode("utf-16-le"), "holds the character U+0000 at offset 1, which YAML does "
                                     "not allow (UTF-16 without its byte-order mark?): save it "
                                     "as UTF-8"),
], ids=["latin-1", "UTF-16 without its mark"])
def test_a_sweep_file_that_is_no_utf8_text_is_refused_in_one_line(content, says, tmp_path,
                                                                   capsys):
    path = tmp_path / "sweep.yaml"
    path.write_bytes(content)
    code = sweeps_main.main(["run", str(path), "--storage", str(tmp_path / "results")])
    assert code == 2
    line = one_error_line(capsys.readouterr())
    assert line == f"error: {path}: {says}", line
    assert not (tmp_path / "results").exists()


def test_a_utf16_sweep_file_with_its_byte_order_mark_is_read(tmp_path, capsys):
    """What a Windows editor's 'Unicode' writes, which YAML allows: planned as the UTF-8 one."""
    plans = []
    for name, encoding in (("utf8.yaml", "utf-8"), ("utf16.yaml", "utf-16")):
        (tmp_path / name).write_bytes(SWEEP_FILE.encode(encoding))
        assert sweeps_main.main(["run", str(tmp_path / name), "--dry-run"]) == 0
        plans.append(capsys.readouterr().out.replace(name[:-5], "FILE"))
    assert plans[0] == plans[1]
