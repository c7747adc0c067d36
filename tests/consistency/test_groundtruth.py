"""GT names, lookup, the hash manifest (including concurrent updates) and the record command."""

from __future__ import annotations

import json
import multiprocessing

import pytest

from pytest_diffperf.consistency import __main__ as cli
from pytest_diffperf.consistency import groundtruth, manifest
from pytest_diffperf.errors import DiffperfError


@pytest.mark.parametrize(
    "fmt, name", [("png", "c_2gpu.png"), ("jpeg", "c_2gpu.jpg"), ("jpg", "c_2gpu.jpg"), (None, "c_2gpu.png")]
)
def test_image_names(fmt, name):
    assert groundtruth.gt_names("c", 2, False, groundtruth.image_ext(fmt), [""]) == [name]


def test_video_names():
    assert groundtruth.gt_names("v", 1, True, "mp4", ["0", "mid", "last", "12"]) == [
        "v_1gpu_frame_0.png",
        "v_1gpu_frame_mid.png",
        "v_1gpu_frame_last.png",
        "v_1gpu_frame_12.png",
    ]


def test_platform_folder_first(gt_dir):
    names = ["v_1gpu_frame_0.png", "v_1gpu_frame_mid.png"]
    for name in names:
        (gt_dir / name).write_bytes(b"root")
    assert groundtruth.locate(gt_dir, "cpu", names, True).folder == gt_dir
    (gt_dir / "cpu").mkdir()
    (gt_dir / "cpu" / names[0]).write_bytes(b"cpu")
    found = groundtruth.locate(gt_dir, "cpu", names, True)
    assert found.folder == gt_dir / "cpu" and found.missing == [1]  # never mixed with the root folder


def test_image_with_another_extension_is_found(gt_dir):
    (gt_dir / "c_1gpu.jpg").write_bytes(b"x")
    assert groundtruth.locate(gt_dir, None, ["c_1gpu.png"], False).files == [gt_dir / "c_1gpu.jpg"]


def test_manifest_round_trip_and_integrity(gt_dir):
    a, b = gt_dir / "a.png", gt_dir / "cpu" / "b.png"
    groundtruth.write(gt_dir, {a: b"aaa", b: b"bbb"})
    recorded = manifest.load(gt_dir)
    assert recorded is not None
    assert sorted(recorded.files) == ["a.png", "cpu/b.png"]
    assert manifest.integrity_problem(gt_dir, recorded, a, manifest.sha256(b"aaa")) is None
    problem = manifest.integrity_problem(gt_dir, recorded, a, manifest.sha256(b"tampered"))
    assert problem is not None
    assert str(a) in problem and manifest.sha256(b"aaa") in problem and manifest.sha256(b"tampered") in problem
    unlisted = manifest.integrity_problem(gt_dir, recorded, gt_dir / "new.png", "0" * 64)
    assert unlisted is not None and "is not listed" in unlisted
    assert not list(gt_dir.rglob("*.tmp"))  # atomic writes leave no temporary files


@pytest.mark.parametrize(
    "content, fragment",
    [
        ("{not json", "invalid JSON: "),
        ('{"format": 1, "files": {"a.png": {"sha256": "xyz", "bytes": 3}}}', "files.a.png.sha256"),
        ('{"format": 2, "files": {}}', "format"),
    ],
)
def test_invalid_manifest(gt_dir, content, fragment):
    (gt_dir / "manifest.json").write_text(content)
    with pytest.raises(DiffperfError) as err:
        manifest.load(gt_dir)
    assert str(gt_dir / "manifest.json") in str(err.value) and fragment in str(err.value)


def _record_many(gt_dir, worker: int) -> None:
    for i in range(5):
        manifest.record(gt_dir, {gt_dir / f"w{worker}_{i}.png": f"{worker}-{i}".encode()})


def test_concurrent_updates_keep_every_entry(gt_dir):
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_record_many, args=(gt_dir, w)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    loaded = manifest.load(gt_dir)
    assert loaded is not None and len(loaded.files) == 20


def test_record_command(gt_dir, capsys):
    (gt_dir / "c_1gpu.png").write_bytes(b"one")
    (gt_dir / "cpu").mkdir()
    (gt_dir / "cpu" / "v_1gpu_frame_mid.png").write_bytes(b"two")
    (gt_dir / ".clip-cache").mkdir()
    (gt_dir / ".clip-cache" / "x.png").write_bytes(b"cache")
    assert cli.main(["record", str(gt_dir)]) == 0
    doc = json.loads((gt_dir / "manifest.json").read_text())
    assert sorted(doc["files"]) == ["c_1gpu.png", "cpu/v_1gpu_frame_mid.png"]
    assert doc["files"]["c_1gpu.png"]["sha256"] == manifest.sha256(b"one")
    assert "recorded 2 file(s)" in capsys.readouterr().out
