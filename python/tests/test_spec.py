"""pev.Spec: SPEC strings, dicts and config.json files read by pev's own parsers."""

import json
import os
import warnings

import numpy as np
import pytest

import pev

LLAMA31 = "tests/spec/configs/llama3_1_8b_instruct.json"
GEMMA3 = "tests/spec/configs/gemma3_1b_v5_layer_types.json"


def test_a_spec_string_round_trips(source_dir):
    s = pev.Spec("rope:rope_theta=500000,head_dim=128")
    assert s.text == "rope:head_dim=128,rope_theta=500000"
    assert s.family == "rope" and s.head_dim == 128 and s.pairs == 64
    assert s.params == {"head_dim": 128, "rope_theta": 500000}
    assert pev.Spec(s.text) == s and hash(pev.Spec(s.text)) == hash(s)
    assert pev.Spec(s) is s
    assert repr(s) == "pev.Spec('rope:head_dim=128,rope_theta=500000')"


def test_a_dict_with_family_is_the_specs_keys():
    s = pev.Spec({"family": "rope", "head_dim": 64, "rope_type": "linear", "factor": 2.0})
    assert s == pev.Spec("rope:head_dim=64,rope_type=linear,factor=2")
    assert pev.Spec({"family": "alibi", "num_heads": 8}).num_heads == 8
    assert pev.Spec({"family": "sinusoidal", "d_model": 32}).d_model == 32


def test_a_config_path_gives_the_clis_values(source_dir, cli, tmp_path):
    path = os.path.join(source_dir, LLAMA31)
    s = pev.Spec(path)
    assert s.family == "rope" and s.rope_type == "llama3"
    (p, fmt, sha), = s.inputs
    assert p == path and fmt == "config" and len(sha) == 64
    got = pev.reference(path, what="inv_freq", dtype="fp32")
    out = tmp_path / "inv.npy"
    cli("reference", "--config", path, "--what", "inv_freq", "--dtype", "fp32",
        "--format", "npy", "--out", out)
    assert got.tobytes() == np.load(out).tobytes()
    # A pathlib.Path and the parsed JSON as a dict give the same spec.
    import pathlib
    assert pev.Spec(pathlib.Path(path)) == s
    with open(path) as f:
        d = pev.Spec(json.load(f))
    assert d == s and d.inputs[0][1] == "config" and d.inputs[0][0] == "config dict"


def test_layer_type_selects_a_group(source_dir):
    path = os.path.join(source_dir, GEMMA3)
    full = pev.Spec(path)
    sliding = pev.Spec(path, layer_type="sliding_attention")
    assert full != sliding
    with pytest.raises(pev.Error, match="layer_type"):
        pev.Spec("rope:head_dim=64", layer_type="sliding_attention")


def test_an_object_with_to_dict_is_a_config():
    class Config:
        def to_dict(self):
            return {"head_dim": 64, "rope_theta": 10000.0, "hidden_size": 512,
                    "num_attention_heads": 8}

    assert pev.Spec(Config()).text.startswith("rope:head_dim=64")


@pytest.mark.parametrize("source,needle", [
    ("rope:head_dim=0", "head_dim"),
    ("rope:head_dim=64,nope=1", "nope"),
    ("nofamily:x=1", "nofamily"),
    ("", "empty"),
    ({"head_dim": 128, "rope_theta": 0}, "rope_theta"),
    ({"family": "rope", "head_dim": object()}, "head_dim"),
    (42, "int"),
])
def test_bad_specs_are_pev_errors_with_pevs_message(source, needle):
    with pytest.raises(pev.Error) as e:
        pev.Spec(source)
    assert needle in str(e.value)
    assert isinstance(e.value, ValueError)


def test_invalid_config_files_give_the_clis_message(source_dir, cli):
    path = os.path.join(source_dir, "tests/spec/invalid_configs/rope_theta_zero.json")
    with pytest.raises(pev.Error) as e:
        pev.Spec(path)
    r = cli("reference", "--config", path, "--what", "inv_freq", check=False)
    assert r.returncode == 2
    assert str(e.value) in r.stderr


def test_a_missing_config_file_is_named(tmp_path):
    with pytest.raises(pev.Error, match="missing.json"):
        pev.Spec(tmp_path / "missing.json")


def test_what_transformers_only_warns_about_is_a_warning():
    config = {"head_dim": 64, "rope_theta": 10000.0, "rope_scaling": {"rope_type": "linear",
              "factor": 2.0, "unknown_key": 1}}
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        s = pev.Spec(config)
    assert s.rope_type == "linear"
    assert any(issubclass(x.category, pev.PevWarning) for x in w), [str(x.message) for x in w]
