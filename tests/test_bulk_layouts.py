"""Input layouts of ``grade bulk``: detection, grouping, and hostile or broken input.

Every fixture is built here, in ``tmp_path``, with ``zipfile``; nothing binary is committed."""

from __future__ import annotations

import io
import stat
import struct
import time
import zipfile
from pathlib import Path

import pytest

from grader.bulk import layouts, reading
from grader.bulk.layouts import Limits, discover

SLUGS = {"grid_local_mask", "attention_rollout"}
EXPECTED = ("no exercise files (expected one of: attention_rollout.py, grid_local_mask.py, "
            "or the same as .ipynb)")


def src(tag: str) -> bytes:
    return f"def f():\n    return {tag!r}\n".encode()


def make_zip(path: Path, members: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", method) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def zip_bytes(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def make_tree(root: Path, files: dict[str, bytes]) -> Path:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


def listing(root: Path, exclude: Path) -> dict[str, tuple[int, int]]:
    """Everything under ``root`` but ``exclude``: path -> (size, mtime)."""
    out = {}
    for p in root.rglob("*"):
        if p == exclude or exclude in p.parents:
            continue
        st = p.lstat()
        out[p.relative_to(root).as_posix()] = (st.st_size, st.st_mtime_ns)
    return out


def by_id(found: layouts.Discovery) -> dict[str, layouts.Submission]:
    return {s.id: s for s in found.submissions}


def rejected(found: layouts.Discovery) -> dict[str, str]:
    return {r.id: r.reason for r in found.rejected}


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return tmp_path / "work"


# --- the four layouts -------------------------------------------------------------------------


def test_folder_of_folders(tmp_path: Path, work: Path) -> None:
    root = make_tree(tmp_path / "in", {
        "alice/grid_local_mask.py": src("alice-grid"),
        "alice/part2/attention_rollout.py": src("alice-rollout"),
        "bob/grid_local_mask.py": src("bob-top"),
        "bob/old/grid_local_mask.py": src("bob-deep"),
        "bob/.ipynb_checkpoints/attention_rollout.py": src("hidden"),
        "roster.csv": b"id\nalice\nbob\n",
    })
    found = discover([root], SLUGS, work)
    assert found.layout == "folders"
    assert "a folder of 2 sub-folders" in found.description
    assert "roster.csv" in found.description
    assert [s.id for s in found.submissions] == ["alice", "bob"]
    assert found.rejected == []
    alice, bob = found.submissions
    assert alice.files == {"attention_rollout": work / "alice" / "attention_rollout.py",
                           "grid_local_mask": work / "alice" / "grid_local_mask.py"}
    assert alice.files["attention_rollout"].read_bytes() == src("alice-rollout")
    assert alice.source == str(root / "alice")
    assert set(bob.files) == {"grid_local_mask"}
    assert bob.files["grid_local_mask"].read_bytes() == src("bob-top")
    assert any("shallowest" in n and "old/grid_local_mask.py" in n for n in bob.notes)


def test_folder_of_zips(tmp_path: Path, work: Path) -> None:
    root = tmp_path / "in"
    make_zip(root / "alice.zip", {"alice/hw/grid_local_mask.py": src("a")})
    make_zip(root / "bob.ZIP", {"grid_local_mask.py": src("b1"),
                                "deep/er/attention_rollout.py": src("b2"),
                                "deeper/still/grid_local_mask.py": src("b-old")})
    found = discover([root], SLUGS, work)
    assert found.layout == "zips"
    assert "a folder of 2 zip files" in found.description
    subs = by_id(found)
    assert set(subs) == {"alice", "bob"}
    assert subs["alice"].files["grid_local_mask"].read_bytes() == src("a")
    assert subs["bob"].files["grid_local_mask"].read_bytes() == src("b1")
    assert subs["bob"].files["attention_rollout"].read_bytes() == src("b2")
    assert all(p.parent == work / s.id for s in found.submissions for p in s.files.values())


def test_canvas_groups_by_user_and_takes_the_latest(tmp_path: Path, work: Path) -> None:
    class_zip = make_zip(tmp_path / "submissions.zip", {
        "smithjohn_101_1000_grid_local_mask.py": src("old"),
        "smithjohn_101_1001_grid_local_mask.py": src("new"),
        "smithjohn_101_900_attention_rollout.py": src("r0"),
        "smithjohn_late_101_1002_attention_rollout-1.py": src("r1"),
        "smithjohn_late_101_1002_attention_rollout-2.py": src("r2"),
        "smithjohn_101_1003_notes.txt": b"hello",
        "doejane_202_2000_grid_local_mask.py": src("jane"),
        "doejane_LATE_202_1999_attention_rollout-3.py": src("jane-r"),
    })
    found = discover([class_zip], SLUGS, work)
    assert found.layout == "canvas"
    assert "Canvas" in found.description and "2 students" in found.description
    assert found.rejected == []
    assert [s.id for s in found.submissions] == ["doejane_202", "smithjohn_101"]
    jane, john = found.submissions
    assert john.files["grid_local_mask"].read_bytes() == src("new")
    assert john.files["attention_rollout"].read_bytes() == src("r2")
    assert john.notes[0] == "late"
    assert any("attention_rollout-2.py" in n and "latest of 3" in n for n in john.notes)
    assert any("notes.txt" in n for n in john.notes)
    assert "smithjohn_late_101_1002_attention_rollout-2.py" in john.source
    assert jane.files["attention_rollout"].read_bytes() == src("jane-r")
    assert "late" in jane.notes


def test_canvas_on_time_is_not_late(tmp_path: Path, work: Path) -> None:
    class_zip = make_zip(tmp_path / "c.zip", {
        "leeann_7_1_grid_local_mask.py": src("late one"),
        "leeann_7_2_grid_local_mask.py": src("on time"),
    })
    (sub,) = discover([class_zip], SLUGS, work).submissions
    assert sub.files["grid_local_mask"].read_bytes() == src("on time")
    assert "late" not in sub.notes


def test_canvas_member_that_is_a_zip(tmp_path: Path, work: Path) -> None:
    class_zip = make_zip(tmp_path / "c.zip", {
        "kimmin_303_3000_homework.zip": zip_bytes({
            "hw/grid_local_mask.py": src("zip-grid"),
            "hw/attention_rollout.py": src("zip-rollout"),
            "hw/README.md": b"notes",
        }),
        "kimmin_303_3001_attention_rollout.py": src("flat-newer"),
        "kimmin_303_2000_grid_local_mask.py": src("flat-older"),
    })
    found = discover([class_zip], SLUGS, work)
    (sub,) = found.submissions
    assert sub.id == "kimmin_303"
    assert sub.files["grid_local_mask"].read_bytes() == src("zip-grid")
    assert sub.files["attention_rollout"].read_bytes() == src("flat-newer")
    assert any("README.md in homework.zip" in n for n in sub.notes)


def test_canvas_member_zip_that_is_hostile_rejects_that_student(tmp_path: Path,
                                                                 work: Path) -> None:
    class_zip = make_zip(tmp_path / "c.zip", {
        "evil_1_10_hw.zip": zip_bytes({"../grid_local_mask.py": src("x")}),
        "evil_1_11_attention_rollout.py": src("fine"),
        "good_2_20_grid_local_mask.py": src("good"),
    })
    found = discover([class_zip], SLUGS, work)
    assert [s.id for s in found.submissions] == ["good_2"]
    assert "unsafe path" in rejected(found)["evil_1"]
    assert not (work / "evil_1").exists()


def test_canvas_member_not_named_like_canvas_is_rejected(tmp_path: Path, work: Path) -> None:
    class_zip = make_zip(tmp_path / "c.zip", {
        "good_2_20_grid_local_mask.py": src("good"),
        "stray.py": src("?"),
    })
    found = discover([class_zip], SLUGS, work)
    assert [s.id for s in found.submissions] == ["good_2"]
    assert [r.id for r in found.rejected] == ["stray.py"]
    assert "not named like a Canvas submission" in found.rejected[0].reason


def test_file_list_is_one_submission(tmp_path: Path, work: Path) -> None:
    root = make_tree(tmp_path / "in", {
        "a/grid_local_mask.py": src("g"),
        "b/attention_rollout-1.py": src("r1"),
        "b/attention_rollout-2.py": src("r2"),
        "b/helper.py": src("h"),
    })
    inputs = [root / "a/grid_local_mask.py", root / "b/attention_rollout-2.py",
              root / "b/attention_rollout-1.py", root / "b/helper.py"]
    found = discover(inputs, SLUGS, work)
    assert found.layout == "files"
    assert "4 .py files" in found.description
    (sub,) = found.submissions
    assert sub.id == "files"
    assert sub.files["attention_rollout"].read_bytes() == src("r2")
    assert sub.files["grid_local_mask"] == work / "files" / "grid_local_mask.py"
    assert any("helper.py" in n for n in sub.notes)
    assert not (work / "files" / "helper.py").exists()


@pytest.mark.parametrize("case", ["mixed", "py_in_dir", "empty_dir", "missing", "not_canvas",
                                  "two_zips", "dir_and_file", "nothing", "corrupt_class_zip"])
def test_unrecognisable_input_is_a_value_error(tmp_path: Path, work: Path, case: str) -> None:
    root = tmp_path / "in"
    root.mkdir()
    if case == "mixed":
        (root / "alice").mkdir()
        make_zip(root / "bob.zip", {"grid_local_mask.py": src("b")})
        inputs = [root]
    elif case == "py_in_dir":
        (root / "grid_local_mask.py").write_bytes(src("x"))
        inputs = [root]
    elif case == "empty_dir":
        inputs = [root]
    elif case == "missing":
        inputs = [root / "nope"]
    elif case == "not_canvas":
        inputs = [make_zip(root / "one.zip", {"alice/grid_local_mask.py": src("a")})]
    elif case == "two_zips":
        inputs = [make_zip(root / f"{n}.zip", {"grid_local_mask.py": src(n)}) for n in "ab"]
    elif case == "dir_and_file":
        (root / "x.py").write_bytes(src("x"))
        inputs = [root, root / "x.py"]
    elif case == "nothing":
        inputs = []
    else:
        (root / "class.zip").write_bytes(b"PK\x03\x04 this is not really a zip")
        inputs = [root / "class.zip"]
    with pytest.raises(ValueError) as err:
        discover(inputs, SLUGS, work)
    message = str(err.value)
    assert message and "\n" not in message and message.count(". ") == 0


# --- broken and hostile input -----------------------------------------------------------------


def test_corrupt_zips_are_rejected(tmp_path: Path, work: Path) -> None:
    root = tmp_path / "in"
    good = make_zip(root / "good.zip", {"grid_local_mask.py": src("g") * 200})
    (root / "garbage.zip").write_bytes(b"this is not a zip at all")
    (root / "truncated.zip").write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    found = discover([root], SLUGS, work)
    assert [s.id for s in found.submissions] == ["good"]
    reasons = rejected(found)
    assert "garbage.zip is not a readable zip file" in reasons["garbage"]
    assert "truncated.zip is not a readable zip file" in reasons["truncated"]


@pytest.mark.parametrize("bad_name", ["../evil.py", "/abs.py", "a/../../evil.py",
                                      "..\\evil.py", "C:/evil.py"])
def test_traversal_member_rejects_the_whole_zip(tmp_path: Path, work: Path,
                                                bad_name: str) -> None:
    root = tmp_path / "in"
    make_zip(root / "mallory.zip", {"grid_local_mask.py": src("m"), bad_name: src("evil")})
    before = listing(tmp_path, work)
    found = discover([root], SLUGS, work)
    assert found.submissions == []
    (rej,) = found.rejected
    assert rej.id == "mallory" and "unsafe path" in rej.reason and rej.source.endswith(".zip")
    assert listing(tmp_path, work) == before
    assert not (work / "mallory").exists()
    assert not list(tmp_path.rglob("evil.py")) and not list(tmp_path.rglob("abs.py"))


def test_symlink_member_rejects_the_whole_zip(tmp_path: Path, work: Path) -> None:
    root = tmp_path / "in"
    root.mkdir()
    with zipfile.ZipFile(root / "mallory.zip", "w") as zf:
        zf.writestr("attention_rollout.py", src("fine"))
        link = zipfile.ZipInfo("grid_local_mask.py")
        link.create_system = 3
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(link, "/etc/passwd")
    found = discover([root], SLUGS, work)
    assert found.submissions == []
    assert "symbolic link member" in rejected(found)["mallory"]
    assert not (work / "mallory").exists()


@pytest.fixture(scope="module")
def bomb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A zip whose grid_local_mask.py is 100 MB of zeros (about 100 KB compressed)."""
    path = tmp_path_factory.mktemp("bomb") / "bomb.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        with zf.open("grid_local_mask.py", "w") as fh:
            block = b"0" * 2**20
            for _ in range(100):
                fh.write(block)
    return path


def _lie_about_size(data: bytes, size: int) -> bytes:
    """Make the headers of the (only) member declare ``size`` unpacked bytes."""
    buf = bytearray(data)
    local, central = buf.find(b"PK\x03\x04"), buf.find(b"PK\x01\x02")
    struct.pack_into("<I", buf, local + 22, size)
    struct.pack_into("<I", buf, central + 24, size)
    return bytes(buf)


SMALL = Limits(max_total_bytes=2**20, max_files=50, max_file_bytes=64 * 2**10)


def test_zip_bomb_is_rejected_from_its_headers(tmp_path: Path, work: Path, bomb: Path) -> None:
    root = tmp_path / "in"
    root.mkdir()
    (root / "bomb.zip").write_bytes(bomb.read_bytes())
    make_zip(root / "fine.zip", {"grid_local_mask.py": src("ok")})
    start = time.process_time()  # CPU, not wall: reading headers is little work under any load
    found = discover([root], SLUGS, work, SMALL)
    assert time.process_time() - start < 1.0
    assert [s.id for s in found.submissions] == ["fine"]
    assert "zip bomb" in rejected(found)["bomb"]
    assert not (work / "bomb").exists()


def test_zip_bomb_with_lying_headers_never_unpacks_past_the_limit(tmp_path: Path, work: Path,
                                                                   bomb: Path) -> None:
    root = tmp_path / "in"
    root.mkdir()
    (root / "liar.zip").write_bytes(_lie_about_size(bomb.read_bytes(), 1000))
    start = time.process_time()  # CPU, not wall: reading headers is little work under any load
    found = discover([root], SLUGS, work, SMALL)
    assert time.process_time() - start < 1.0
    assert found.submissions == []
    assert "liar" in rejected(found)
    written = [p for p in work.rglob("*") if p.is_file()] if work.exists() else []
    assert sum(p.stat().st_size for p in written) <= SMALL.max_file_bytes


def test_reading_stops_at_the_cap_whatever_the_stream_says() -> None:
    budget = reading.Budget(10**9, "x.zip")
    with pytest.raises(reading.Reject, match="more than its header declares"):
        reading.read_capped(io.BytesIO(b"0" * 10**6), 1000, budget, "m.py")
    assert budget.left >= 10**9 - 1001 - reading.CHUNK
    small = reading.Budget(500, "x.zip")
    with pytest.raises(reading.Reject, match="zip bomb"):
        reading.read_capped(io.BytesIO(b"0" * 10**6), 10**6, small, "m.py")


def test_per_zip_total_is_counted_across_members(tmp_path: Path, work: Path) -> None:
    root = tmp_path / "in"
    make_zip(root / "big.zip", {"grid_local_mask.py": b"#" * 40_000,
                                "attention_rollout.py": b"#" * 40_000})
    limits = Limits(max_total_bytes=60_000, max_files=10, max_file_bytes=50_000)
    found = discover([root], SLUGS, work, limits)
    assert found.submissions == [] and "zip bomb" in rejected(found)["big"]


def test_too_many_members(tmp_path: Path, work: Path) -> None:
    root = tmp_path / "in"
    members = {f"junk/{i}.txt": b"x" for i in range(60)}
    make_zip(root / "many.zip", {"grid_local_mask.py": src("m"), **members})
    found = discover([root], SLUGS, work, SMALL)
    assert "61 members, over the limit of 50" in rejected(found)["many"]


def test_one_file_too_large_is_a_note(tmp_path: Path, work: Path) -> None:
    root = make_tree(tmp_path / "in", {"alice/grid_local_mask.py": b"#" * 70_000,
                                       "alice/attention_rollout.py": src("ok")})
    (sub,) = discover([root], SLUGS, work, SMALL).submissions
    assert set(sub.files) == {"attention_rollout"}
    assert any("larger than the 64 KiB limit" in n for n in sub.notes)


def test_unsupported_compression_is_not_decompressed(tmp_path: Path, work: Path) -> None:
    root = tmp_path / "in"
    make_zip(root / "bz.zip", {"grid_local_mask.py": src("bz")}, zipfile.ZIP_BZIP2)
    found = discover([root], SLUGS, work)
    assert "compression method 12" in rejected(found)["bz"]


@pytest.mark.parametrize("content, words", [
    ("café = 1\n".encode("latin-1"), "is not UTF-8 text (byte 0xe9 at offset 3)"),
    (b"def f():\x00\n    return 1\n", "is binary (it contains NUL bytes)"),
    ("# -*- coding: latin-1 -*-\ncafé = 1\n".encode("latin-1"),  # the worker's rule too
     "declares the encoding latin-1 (line 1), but only UTF-8 source files are accepted"),
])
def test_bad_text_file(tmp_path: Path, work: Path, content: bytes, words: str) -> None:
    root = make_tree(tmp_path / "in", {
        "alice/grid_local_mask.py": content, "alice/attention_rollout.py": src("ok"),
        "bob/grid_local_mask.py": content,
    })
    found = discover([root], SLUGS, work)
    (alice,) = found.submissions
    assert set(alice.files) == {"attention_rollout"}
    assert f"grid_local_mask.py {words}; skipped" in alice.notes
    assert rejected(found)["bob"] == f"no usable exercise file: grid_local_mask.py {words}"
    assert not (work / "bob").exists()


def test_utf8_with_a_bom_and_crlf_is_copied_as_it_is(tmp_path: Path, work: Path) -> None:
    content = b"\xef\xbb\xbf# caf\xc3\xa9\r\ndef f():\r\n    return 1\r\n"
    root = make_tree(tmp_path / "in", {"alice/grid_local_mask.py": content})
    (alice,) = discover([root], SLUGS, work).submissions
    assert alice.files["grid_local_mask"].read_bytes() == content and not alice.notes


def test_bad_text_file_in_zip(tmp_path: Path, work: Path) -> None:
    root = tmp_path / "in"
    make_zip(root / "bob.zip", {"src/grid_local_mask.py": b"\xff\xfe\x00\x01"})
    found = discover([root], SLUGS, work)
    assert "src/grid_local_mask.py is binary" in rejected(found)["bob"]


def test_duplicate_ids_keep_the_first(tmp_path: Path, work: Path) -> None:
    root = make_tree(tmp_path / "in", {
        "bob smith/grid_local_mask.py": src("first"),
        "bob_smith/grid_local_mask.py": src("second"),
        "Carol/grid_local_mask.py": src("C"),
        "carol/grid_local_mask.py": src("c"),
    })
    found = discover([root], SLUGS, work)
    subs = by_id(found)
    assert set(subs) == {"bob_smith", "Carol"}
    assert subs["bob_smith"].files["grid_local_mask"].read_bytes() == src("first")
    assert "id 'bob smith' sanitised to 'bob_smith'" in subs["bob_smith"].notes
    reasons = [r.reason for r in found.rejected]
    assert len(reasons) == 2 and all(r.startswith("duplicate id") for r in reasons)
    assert {r.source for r in found.rejected} == {str(root / "bob_smith"), str(root / "carol")}


def test_empty_folder_and_zip_without_exercises(tmp_path: Path, work: Path) -> None:
    root = make_tree(tmp_path / "in", {"alice/grid_local_mask.py": src("a"),
                                       "dave/README.md": b"# hi", "dave/hw1.py": src("x")})
    (root / "empty").mkdir()
    found = discover([root], SLUGS, work)
    reasons = rejected(found)
    assert reasons["empty"] == f"{EXPECTED}; it is empty"
    assert reasons["dave"] == f"{EXPECTED}; found only hw1.py, README.md"
    zroot = tmp_path / "zips"
    make_zip(zroot / "erin.zip", {"notes/README.md": b"# hi"})
    make_zip(zroot / "fay.zip", {})
    zfound = discover([zroot], SLUGS, tmp_path / "work2")
    assert all(r.reason.startswith(EXPECTED) for r in zfound.rejected)
    assert [r.id for r in zfound.rejected] == ["erin", "fay"]


def test_unknown_files_are_ignored_and_not_copied(tmp_path: Path, work: Path) -> None:
    root = make_tree(tmp_path / "in", {
        "alice/grid_local_mask.py": src("a"), "alice/utils.py": src("u"),
        "alice/README.md": b"#", "alice/data/x.npy": b"\x93NUMPY",
        "alice/__pycache__/grid_local_mask.cpython-311.pyc": b"\x00",
        "alice/.DS_Store": b"\x00", "alice/gridlocalmask.py": src("typo"),
    })
    (sub,) = discover([root], SLUGS, work).submissions
    assert sorted(p.name for p in (work / "alice").iterdir()) == ["grid_local_mask.py"]
    assert any("utils.py" in n and "helper modules are not copied" in n for n in sub.notes)
    assert any("gridlocalmask.py" in n for n in sub.notes)
    assert "ignored 2 other files: README.md, data/x.npy" in sub.notes
    assert not any("DS_Store" in n or "pycache" in n for n in sub.notes)


def test_other_spelling_of_an_exercise_file(tmp_path: Path, work: Path) -> None:
    root = make_tree(tmp_path / "in", {"alice/Grid_Local_Mask.py": src("a")})
    (sub,) = discover([root], SLUGS, work).submissions
    assert sub.files["grid_local_mask"] == work / "alice" / "grid_local_mask.py"
    assert "took Grid_Local_Mask.py as grid_local_mask.py" in sub.notes


@pytest.mark.parametrize("raw, expected", [
    ("alice", "alice"), ("Bob Smith (2)", "Bob_Smith_2"), ("José Müller", "Jose_Muller"),
    ("..", None), (".hidden", "hidden"), ("a/b\\c", "a_b_c"), ("  ", None), ("日本", None),
    ("x" * 300, "x" * 100), ("-rf", "rf"), ("a..b", "a..b"),
])
def test_id_sanitising(raw: str, expected: str | None) -> None:
    sid = reading.sanitise_id(raw)
    assert sid not in ("", ".", "..") and "/" not in sid and "\\" not in sid
    assert all(c.isascii() and (c.isalnum() or c in "._-") for c in sid)
    if expected is None:
        assert sid.startswith("id-") and len(sid) == 11
    else:
        assert sid == expected


def test_sanitised_ids_in_folders_and_zips(tmp_path: Path, work: Path) -> None:
    root = tmp_path / "in"
    make_zip(root / "Ann Lee.zip", {"grid_local_mask.py": src("a")})
    make_zip(root / "日本.zip", {"grid_local_mask.py": src("b")})
    make_zip(root / ".hidden.zip", {"grid_local_mask.py": src("c")})
    found = discover([root], SLUGS, work)
    ids = sorted(s.id for s in found.submissions)
    assert len(ids) == 2 and ids[0] == "Ann_Lee" and ids[1].startswith("id-")
    assert all((work / sid / "grid_local_mask.py").is_file() for sid in ids)


def test_symlinks_in_a_folder_are_not_followed(tmp_path: Path, work: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    root = make_tree(tmp_path / "in", {"alice/attention_rollout.py": src("a")})
    (root / "alice" / "grid_local_mask.py").symlink_to(secret)
    (root / "alice" / "linked").symlink_to(tmp_path, target_is_directory=True)
    (root / "mallory").symlink_to(tmp_path / "in" / "alice", target_is_directory=True)
    found = discover([root], SLUGS, work)
    (alice,) = found.submissions
    assert set(alice.files) == {"attention_rollout"}
    assert any("symbolic link" in n for n in alice.notes)
    assert "symbolic link" in rejected(found)["mallory"]
    assert "TOP SECRET" not in "".join(p.read_text() for p in work.rglob("*.py"))


def test_fifo_named_like_an_exercise_does_not_hang(tmp_path: Path, work: Path) -> None:
    import os

    root = make_tree(tmp_path / "in", {"alice/attention_rollout.py": src("a")})
    os.mkfifo(root / "alice" / "grid_local_mask.py")
    (sub,) = discover([root], SLUGS, work).submissions
    assert any("not a regular file" in n for n in sub.notes)


def test_work_folder_inside_the_input_is_skipped(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "in", {"alice/grid_local_mask.py": src("a")})
    work = root / "_work"
    discover([root], SLUGS, work)
    again = discover([root], SLUGS, work)
    assert [s.id for s in again.submissions] == ["alice"] and again.rejected == []


def test_a_rerun_removes_stale_exercise_files(tmp_path: Path, work: Path) -> None:
    root = make_tree(tmp_path / "in", {"alice/grid_local_mask.py": src("a"),
                                       "alice/attention_rollout.py": src("r"),
                                       "bob/grid_local_mask.py": src("b")})
    discover([root], SLUGS, work)
    (root / "alice" / "attention_rollout.py").unlink()
    (root / "bob" / "grid_local_mask.py").write_bytes(b"\xff")
    found = discover([root], SLUGS, work)
    assert set(by_id(found)["alice"].files) == {"grid_local_mask"}
    assert not (work / "alice" / "attention_rollout.py").exists()
    assert "bob" in rejected(found) and not (work / "bob").exists()


def test_nothing_is_written_outside_workdir(tmp_path: Path, work: Path, bomb: Path) -> None:
    root = make_tree(tmp_path / "in", {"folder_kid/grid_local_mask.py": src("f")})
    zroot = tmp_path / "zips"
    make_zip(zroot / "ok.zip", {"a/grid_local_mask.py": src("ok"), "a/README": b"r"})
    make_zip(zroot / "trav.zip", {"../../zip_slip_escapee.py": src("x"),
                                  "grid_local_mask.py": src("t")})
    make_zip(zroot / "abs.zip", {str(tmp_path / "zip_slip_abs_escapee.py"): src("x")})
    (zroot / "bomb.zip").write_bytes(bomb.read_bytes())
    (zroot / "liar.zip").write_bytes(_lie_about_size(bomb.read_bytes(), 5000))
    (zroot / "corrupt.zip").write_bytes(b"PK\x05\x06" + b"\x00" * 18)
    class_zip = make_zip(tmp_path / "canvas.zip", {
        "a_1_1_grid_local_mask.py": src("a"), "../b_2_2_grid_local_mask.py": src("b"),
        "c_3_3_hw.zip": zip_bytes({"/etc/grid_local_mask.py": src("c")}),
    })
    files = [root / "folder_kid" / "grid_local_mask.py"]
    before = listing(tmp_path, work)
    for inputs in ([root], [zroot], [class_zip], files):
        discover(inputs, SLUGS, work, SMALL)
    assert listing(tmp_path, work) == before
    # (names no test's folder has: tests named "...escaped..." share this parent folder)
    assert not list(tmp_path.parent.glob("zip_slip_*")) and not list(tmp_path.glob("zip_*"))
    written = sorted(p.relative_to(work).as_posix() for p in work.rglob("*"))
    assert written == ["a_1", "a_1/grid_local_mask.py", "files", "files/grid_local_mask.py",
                       "folder_kid", "folder_kid/grid_local_mask.py", "ok", "ok/grid_local_mask.py"]


def test_canvas_member_zip_that_is_corrupt(tmp_path: Path, work: Path) -> None:
    class_zip = make_zip(tmp_path / "c.zip", {
        "ann_1_10_hw.zip": b"not a zip", "ann_1_11_attention_rollout.py": src("a"),
        "ben_2_20_hw.zip": b"not a zip either",
    })
    found = discover([class_zip], SLUGS, work)
    (ann,) = found.submissions
    assert set(ann.files) == {"attention_rollout"}
    assert any("hw.zip (submission 10) is not a readable zip file" in n for n in ann.notes)
    assert rejected(found)["ben_2"].startswith(
        "no usable exercise file: hw.zip (submission 20) is not a readable zip file")
    assert found.rejected[0].source == "c.zip: ben_2_20_hw.zip"


def test_canvas_limits_apply_per_student(tmp_path: Path, work: Path) -> None:
    members = {f"many_1_{i}_grid_local_mask-{i}.py": src(str(i)) for i in range(60)}
    class_zip = make_zip(tmp_path / "c.zip", {
        **members, "big_2_1_grid_local_mask.py": b"#" * 60_000,
        "big_2_2_data.bin": b"\x00" * 2**21, "fine_3_1_grid_local_mask.py": src("f"),
    })
    found = discover([class_zip], SLUGS, work, SMALL)
    assert [s.id for s in found.submissions] == ["fine_3"]
    reasons = rejected(found)
    assert reasons["many_1"] == ("the Canvas submission of many_1 has 60 members, over the "
                                 "limit of 50")
    assert "declares 2.06 MiB unpacked, over the 1 MiB limit" in reasons["big_2"]


def test_slugs_from_the_catalog(tmp_path: Path, work: Path) -> None:
    from grader import catalog

    root = make_tree(tmp_path / "in", {"alice/patch_vit.py": src("p"), "alice/x.py": src("x")})
    (sub,) = discover([root], catalog.load(), work).submissions
    assert set(sub.files) == {"patch_vit"}
