"""``diffperf-refserver export``: the built-in models as diffusers folders that real servers load, and the
reference server serving such a folder by its name."""

from __future__ import annotations

import json

import pytest

from pytest_diffperf.refserver.cli import main
from pytest_diffperf.refserver.export import EXPORTS, builtin_model, exported


def test_an_exported_flux_loads_in_diffusers_with_the_reference_servers_weights(tmp_path, capsys):
    # diffusers and the reference server's modules imported here, not at collection: about 2 CPU-s per xdist worker
    import torch
    from diffusers import FluxPipeline

    from pytest_diffperf.refserver.modules import build_modules

    assert main(["export", str(tmp_path), "tiny/flux-t2i"]) == 0
    folder = tmp_path / "tiny-FLUX.1-dev"
    assert capsys.readouterr().out == f"tiny/flux-t2i: {folder}\n"
    assert json.loads((folder / "model_index.json").read_text())["_class_name"] == "FluxPipeline"
    loaded = FluxPipeline.from_pretrained(folder)
    ours = build_modules("flux")["transformer"].state_dict()
    assert all(torch.equal(tensor, ours[name]) for name, tensor in loaded.transformer.state_dict().items())
    assert exported(tmp_path, "tiny/flux-t2i")
    assert main(["export", str(tmp_path), "tiny/flux-t2i"]) == 0  # complete: kept
    assert capsys.readouterr().out == f"tiny/flux-t2i: {folder} (kept)\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["export", "out"], "export: name a MODEL or pass --all"),
        (["export", "out", "tiny/nope"], "export: unknown model 'tiny/nope'; built-in: tiny/flux-kontext-edit"),
    ],
)
def test_export_usage_errors_name_what_is_expected(tmp_path, monkeypatch, capsys, args, message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        main(args)
    assert exited.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_the_reference_server_knows_each_exported_folder_by_its_name():
    for model, spec in EXPORTS.items():
        assert builtin_model(f"/any/where/{spec.folder}/") == model
        assert builtin_model(model) == model
    assert builtin_model("/any/where/FLUX.1-dev") is None
