"""pev.Spec and pev.reference read every config.json the CLI reads (docs/python.md §2): T5, ALiBi
and sinusoidal families as `pev reference --config` reads them, and a learned-table config refused
with the CLI's own message (issue 34)."""

import os

import numpy as np
import pytest

import pev
from conftest import SOURCE_DIR

FAMILIES = os.path.join(SOURCE_DIR, "tests", "spec", "configs", "families")


def config(name):
    return os.path.join(FAMILIES, name + ".json")


@pytest.mark.parametrize("name, family, text", [
    ("t5_small", "t5", "t5"),
    ("bloom_560m", "alibi", "alibi:num_heads=16"),
    ("distilbert_sinusoidal", "sinusoidal", "sinusoidal:d_model=768"),
])
def test_a_config_of_another_family_is_read_as_the_cli_reads_it(name, family, text, cli, tmp_path):
    s = pev.Spec(config(name))
    assert (s.family, s.text) == (family, text)
    assert s.inputs[0][1] == "config"
    out = tmp_path / "ref.npy"
    cli("reference", "--config", config(name), "--positions", "0:8", "--format", "npy", "--out",
        out)
    a = pev.reference(config(name), range(8))
    assert a.tobytes() == np.load(out).tobytes()


def test_a_config_dict_of_another_family_is_read_too():
    import json

    with open(config("bloom_560m"), encoding="utf-8") as f:
        assert pev.Spec(json.load(f)).text == "alibi:num_heads=16"


def test_t5_layer_type_selects_the_decoders_buckets(cli, tmp_path):
    dec = pev.Spec(config("t5_small"), layer_type="decoder")
    assert dec.family == "t5" and dec != pev.Spec(config("t5_small"))
    out = tmp_path / "dec.npy"
    cli("reference", "--config", config("t5_small"), "--layer-type", "decoder", "--positions",
        "0:8", "--format", "npy", "--out", out)
    assert pev.reference(dec, range(8)).tobytes() == np.load(out).tobytes()


@pytest.mark.parametrize("name", ["gpt2", "opt_125m"])
def test_a_learned_config_is_refused_as_the_cli_refuses_it(name, cli, tmp_path):
    r = cli("reference", "--config", config(name), "--positions", "0:8", "--format", "npy",
            "--out", tmp_path / "x.npy", check=False)
    assert r.returncode != 0
    with pytest.raises(pev.Error, match="learned absolute position embeddings") as e:
        pev.Spec(config(name))
    assert "no RoPE" in str(e.value) and "no RoPE" in r.stderr
