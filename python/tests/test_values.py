"""pev.reference and pev.compute: bit for bit the arrays `pev reference` and `pev compute` write
with --format npy, owning pev's buffer (no copy)."""

import numpy as np
import pytest

import pev

LLAMA3 = ("rope:head_dim=128,rope_theta=500000,rope_type=llama3,factor=8,low_freq_factor=1,"
          "high_freq_factor=4,original_max_position_embeddings=8192")

REFERENCE_CASES = [
    ("rope:head_dim=64", "0:33", None, dtype)
    for dtype in ("exact", "fp64", "fp32", "fp16", "bf16")
] + [
    (LLAMA3, "0:70000:997", None, "fp32"),
    (LLAMA3, None, "inv_freq", "fp32"),
    ("rope:head_dim=64,rope_type=yarn,factor=4,original_max_position_embeddings=4096", None,
     "attention_factor", "exact"),
    ("rope:head_dim=96,partial_rotary_factor=0.5,layout=interleaved", "5:9", None, "bf16"),
    ("sinusoidal:d_model=48", "0:40", None, "fp32"),
    ("alibi:num_heads=6", "0:5", "bias", "fp16"),
    ("alibi:num_heads=12", None, "slopes", "exact"),
    ("t5:num_buckets=32,max_distance=128", "-300:300:7", None, "exact"),
    # MRoPE: a range is text tokens, every stream equal (docs/encodings.md §4.6) — the module read it
    # as the three streams one after another ([1, ...] instead of [4, ...]) before app owned it.
    ("rope:head_dim=32,rope_theta=1000000,mrope_section=[4,6,6]", "0:4", None, "fp32"),
]


@pytest.mark.parametrize("spec,positions,what,dtype", REFERENCE_CASES)
def test_reference_is_bit_identical_to_the_cli_npy(tmp_path, cli, spec, positions, what, dtype):
    out = tmp_path / "ref.npy"
    args = ["reference", "--spec", spec, "--format", "npy", "--out", out]
    if positions:
        args += [f"--positions={positions}"]
    if what:
        args += ["--what", what]
    r = cli(*args, "--dtype", dtype)
    assert r.returncode == 0, r.stderr
    want = np.load(out)
    got = pev.reference(spec, positions, what=what, dtype=dtype)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


COMPUTE_CASES = [
    ("hf", LLAMA3, "0:5000:13", "fp32"),
    ("ggml", "rope:head_dim=64,rope_theta=1000000", "0:300", "fp32"),
    ("table-fp16", "rope:head_dim=64", "0:300", "fp16"),
    ("table-bf16", "rope:head_dim=64", "0:300", "bf16"),
    ("accurate", "sinusoidal:d_model=32", "0:64", "fp32"),
]


@pytest.mark.parametrize("strategy,spec,positions,dtype", COMPUTE_CASES)
def test_compute_is_bit_identical_to_the_cli_npy(tmp_path, cli, strategy, spec, positions, dtype):
    out = tmp_path / "c.npy"
    r = cli("compute", "--strategy", strategy, "--spec", spec, f"--positions={positions}",
            "--dtype", dtype, "--format", "npy", "--out", out)
    assert r.returncode == 0, r.stderr
    want = np.load(out)
    got = pev.compute(strategy, spec, positions, dtype=dtype)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


def test_positions_forms_agree():
    spec = "rope:head_dim=32"
    a = pev.reference(spec, range(3, 40, 4), dtype="fp32")
    b = pev.reference(spec, "3:40:4", dtype="fp32")
    c = pev.reference(spec, np.arange(3, 40, 4, dtype=np.int32), dtype="fp32")
    d = pev.reference(spec, list(range(3, 40, 4)), dtype="fp32")
    torch = pytest.importorskip("torch")
    e = pev.reference(spec, torch.arange(3, 40, 4), dtype="fp32")
    for x in (b, c, d, e):
        assert x.tobytes() == a.tobytes()


def test_mrope_positions_list_holds_the_streams_one_after_another():
    spec = "rope:head_dim=32,rope_theta=1000000,mrope_section=[4,6,6]"
    text = pev.reference(spec, "0:5", dtype="fp32")
    assert text.shape[0] == 5
    assert pev.reference(spec, list(range(5)) * 3, dtype="fp32").tobytes() == text.tobytes()
    with pytest.raises(pev.Error, match="MRoPE position streams"):
        pev.reference(spec, [0, 1, 2, 3], dtype="fp32")


def test_arbitrary_positions_rows_match_the_range():
    spec = "rope:head_dim=32"
    full = pev.reference(spec, range(0, 100), dtype="fp32")
    picked = pev.reference(spec, [97, 3, 50], dtype="fp32")
    assert picked.tobytes() == full[[97, 3, 50]].tobytes()


def test_arrays_own_pevs_buffer_without_a_copy():
    a = pev.reference("rope:head_dim=64", range(16), dtype="fp32")
    # The array is a view of pev's buffer, kept alive by a capsule: no copy was made.
    assert not a.flags.owndata and a.base is not None
    assert a.flags.c_contiguous and a.flags.writeable
    b = pev.compute("hf", "rope:head_dim=64", range(16))
    assert not b.flags.owndata


def test_hf_compute_equals_the_hf_recipe_reference_in_fp32():
    # transformers' recipe, rounded where it rounds, is what its fp32 kernel computes up to the
    # libm: compute and reference agree within 2 ulp of fp32 (cos/sin each one rounding of a
    # libm result within 1 ulp, docs/numerics.md).
    ref = pev.reference("rope:head_dim=64", range(256), dtype="fp32", recipe="hf")
    got = pev.compute("hf", "rope:head_dim=64", range(256))
    ulp = np.spacing(np.abs(ref).astype(np.float32))
    assert np.all(np.abs(got.astype(np.float64) - ref.astype(np.float64)) <= 2 * ulp + 2**-149)


def test_bf16_is_returned_as_encodings():
    a = pev.reference("rope:head_dim=16", range(4), dtype="bf16")
    f = pev.reference("rope:head_dim=16", range(4), dtype="fp32")
    assert a.dtype == np.uint16
    # bf16 is the upper half of an fp32: every value is the correct rounding of the exact one,
    # within half a bf16 ulp (2^-8 relative) of the fp32 rounding.
    as_f32 = (a.astype(np.uint32) << 16).view(np.float32)
    assert np.all(np.abs(as_f32 - f) <= np.abs(f) * 2.0**-8 + 2.0**-133)


def test_precision_argument_changes_nothing_visible_in_fp64():
    a = pev.reference("rope:head_dim=32", range(64), dtype="fp64")
    b = pev.reference("rope:head_dim=32", range(64), dtype="fp64", precision=300)
    assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("kwargs,needle", [
    (dict(spec="rope:head_dim=64", positions=None), "positions"),
    (dict(spec="rope:head_dim=64", positions=range(4), what="pe"), "pe"),
    (dict(spec="rope:head_dim=64", positions=range(4), dtype="fp8"), "dtype"),
    (dict(spec="rope:head_dim=64", positions=[-1]), "negative"),
    (dict(spec="rope:head_dim=64", positions=7), "range(N)"),
    (dict(spec="rope:head_dim=64", positions=[[1, 2]]), "1-d"),
    (dict(spec="rope:head_dim=64", positions=[0.5]), "integers"),
    (dict(spec="rope:head_dim=64", positions=range(4), recipe="nope"), "nope"),
])
def test_bad_input_is_a_pev_error_naming_it(kwargs, needle):
    spec = kwargs.pop("spec")
    positions = kwargs.pop("positions")
    with pytest.raises(pev.Error) as e:
        pev.reference(spec, positions, **kwargs)
    assert needle in str(e.value)
    assert isinstance(e.value, ValueError)


def test_compute_refuses_exact_dtype():
    with pytest.raises(pev.Error, match="fp32, fp16 or bf16"):
        pev.compute("hf", "rope:head_dim=64", range(4), dtype="exact")
