"""pev.certify on tensors and dump files: the same certificate as `pev certify --impl`."""

import json
import os

import numpy as np
import pytest

import pev
from conftest import hf_table, seed_from_env

SPEC = "rope:head_dim=64,rope_theta=10000"


def save_npy(d, tmp_path):
    files = []
    for name, a in d.items():
        p = tmp_path / f"{name}.npy"
        np.save(p, a)
        files.append(p)
    return files


def comparable(cert_json):
    """certificate.json without what differs between runs (time, inputs' descriptions, the
    program that made it)."""
    d = json.loads(cert_json) if isinstance(cert_json, str) else dict(cert_json)
    for k in ("seconds", "inputs", "provenance", "library", "created", "command"):
        d.pop(k, None)
    return d


def test_numpy_tables_certify_like_the_cli(tmp_path, cli):
    cos, sin = hf_table(np.arange(2048))
    cert = pev.certify(SPEC, {"cos": cos, "sin": sin}, recipe="hf")
    assert cert.ok and cert.certified and cert.claim_holds
    assert cert.grade in pev.GRADES
    files = save_npy({"cos": cos, "sin": sin}, tmp_path)
    out = tmp_path / "cli-out"
    r = cli("certify", "--spec", SPEC, "--recipe", "hf", "--out", out,
            *sum((["--impl", f] for f in files), []))
    assert r.returncode == cert.exit_code == 0, r.stderr
    cli_cert = json.loads((out / "certificate.json").read_text())
    assert cli_cert["grade"] == cert.grade
    mine = {c["id"]: c for c in cert.to_dict()["checks"]}
    for c in cli_cert["checks"]:
        assert mine[c["id"]]["recipes"] == c["recipes"]
        assert mine[c["id"]]["worst"] == c["worst"]
    assert cert.layout == "separate, detected"
    assert set(cert.rho) == {"cos", "sin"} and cert.rho["cos"]["hf"] <= 1
    # The summary's recipes lines: ✓ exactly where `holds`.
    for check, row in cert.recipes.items():
        line = next(l for l in str(cert).splitlines() if l.startswith(f"recipes   {check}:"))
        for name, r in row.items():
            after = line.split(f" {name} ")[1].split(" ")  # ρ, then ✓ when it holds
            assert r["holds"] == (after[1:2] == ["✓"])
    assert cert.recipes["cos"]["hf"]["holds"] and not cert.recipes["cos"]["exact"]["holds"]


def test_dump_files_give_the_cli_certificate(tmp_path, cli):
    cos, sin = hf_table(np.arange(512))
    files = save_npy({"cos": cos, "sin": sin}, tmp_path)
    cert = pev.certify(SPEC, files)
    out = tmp_path / "cli-out"
    cli("certify", "--spec", SPEC, "--out", out, *sum((["--impl", f] for f in files), []))
    assert comparable(cert.json) == comparable((out / "certificate.json").read_text())


def test_write_writes_the_files_the_cli_writes(tmp_path, cli):
    cos, sin = hf_table(np.arange(300))
    files = save_npy({"cos": cos, "sin": sin}, tmp_path)
    cert = pev.certify(SPEC, files)
    mine = tmp_path / "py-out"
    assert cert.write(mine) == os.fspath(mine)
    out = tmp_path / "cli-out"
    cli("certify", "--spec", SPEC, "--out", out, *sum((["--impl", f] for f in files), []))
    listing = lambda d: sorted(os.path.relpath(os.path.join(r, f), d)
                               for r, _, fs in os.walk(d) for f in fs)
    assert listing(mine) == listing(out)
    assert json.loads((mine / "certificate.json").read_text()) == cert.to_dict()
    # Replacing its own output is allowed; a directory holding anything else is refused.
    cert.write(mine)
    other = tmp_path / "other"
    other.mkdir()
    (other / "mine.txt").write_text("x")
    with pytest.raises(pev.Error):
        cert.write(other)
    assert (other / "mine.txt").read_text() == "x"


def test_torch_cpu_tensors_in_transformers_layout():
    torch = pytest.importorskip("torch")
    cos, sin = hf_table(np.arange(1024))
    # transformers returns [batch, P, head_dim]: halves duplicated, a batch of one.
    cos_t = torch.from_numpy(np.concatenate([cos, cos], axis=1))[None]
    sin_t = torch.from_numpy(np.concatenate([sin, sin], axis=1))[None]
    cert = pev.certify(SPEC, {"cos": cos_t, "sin": sin_t}, recipe="hf")
    assert cert.ok, str(cert)
    assert cert.layout.startswith("halves")
    # The same tensors as a (cos, sin) pair, non-contiguous views included.
    cert2 = pev.certify(SPEC, (cos_t.transpose(1, 2).contiguous().transpose(1, 2), sin_t))
    assert cert2.grade == cert.grade


def test_torch_bf16_tensors():
    torch = pytest.importorskip("torch")
    t = pev.reference(SPEC, range(512), dtype="fp32")
    cos = torch.from_numpy(t[..., 0].copy()).to(torch.bfloat16)
    sin = torch.from_numpy(t[..., 1].copy()).to(torch.bfloat16)
    cert = pev.certify(SPEC, {"cos": cos, "sin": sin})
    # fp32 correctly rounded, rounded again to bf16: a double rounding, faithful at least.
    assert cert.certified and cert.checks[0].dtype == "bf16"
    assert pev.GRADES.index(cert.grade) <= pev.GRADES.index("faithful")


def test_swapped_tables_are_diagnosed():
    cos, sin = hf_table(np.arange(256))
    cert = pev.certify(SPEC, {"cos": sin, "sin": cos}, recipe="hf")
    assert not cert.ok and not cert.certified and cert.exit_code == 1
    assert cert.diagnosis.named == "sin-cos-swapped"
    first = cert.diagnosis.first_mismatches[0]
    assert first.position == 0 and first.got == "0x0p+0"
    assert cert.worst.rho > 1


def test_random_perturbation_is_caught():
    seed = seed_from_env()
    rng = np.random.default_rng(seed)
    cos, sin = hf_table(np.arange(4096))
    row, col = int(rng.integers(1, 4096)), int(rng.integers(0, 32))
    # 0.01 off at one value: beyond the hf recipe's bound below position 4096 (the fp32 angle
    # p * inv_freq is off by at most half an ulp of 4096, 2^-12, plus the libm's few ulps).
    cos[row, col] += np.float32(0.01)
    cert = pev.certify(SPEC, {"cos": cos, "sin": sin}, recipe="hf")
    assert not cert.ok
    first = cert.diagnosis.first_mismatches
    assert [(m.check, m.position, m.index) for m in first] == [("cos", row, col)]


def test_positions_and_complex_freqs_cis():
    pos = np.array([5, 70000, 3, 1 << 20], dtype=np.int64)
    cos, sin = hf_table(pos, head_dim=128, theta=500000.0)
    spec = "rope:head_dim=128,rope_theta=500000"
    cert = pev.certify(spec, {"cos": cos, "sin": sin, "positions": pos}, recipe="hf")
    assert cert.ok, str(cert)
    cis = (cos.astype(np.complex64) + 1j * sin.astype(np.complex64)).astype(np.complex64)
    cert2 = pev.certify(spec, {"freqs_cis": cis}, positions=pos, recipe="hf")
    assert cert2.ok and cert2.to_dict()["checks"][0]["recipes"] == cert.to_dict()["checks"][0]["recipes"]


@pytest.mark.parametrize("positions", [range(1000, 1512), "1000:1512", np.arange(1000, 1512)])
def test_positions_of_the_rows_in_every_form(positions):
    cos, sin = hf_table(np.arange(1000, 1512))
    cert = pev.certify(SPEC, {"cos": cos, "sin": sin}, positions=positions, recipe="hf")
    assert cert.ok, str(cert)
    assert cert.to_dict()["positions"]["min"] == 1000
    # Read as 0 ... 511 they are the wrong rows.
    assert not pev.certify(SPEC, {"cos": cos, "sin": sin}, recipe="hf").ok


def test_sinusoidal_pe():
    pe = pev.reference("sinusoidal:d_model=64", range(100), dtype="fp32")
    cert = pev.certify("sinusoidal:d_model=64", pe)
    assert cert.grade == "correctly-rounded"


class FakeCuda:
    """A tensor in device memory, as DLPack describes it."""

    shape = (4, 32)
    device = "cuda:0"

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None):
        raise AssertionError("pev must not ask a device tensor for its data")


def test_a_device_tensor_is_refused_naming_cpu():
    cos, _ = hf_table(np.arange(4))
    with pytest.raises(pev.Error, match=r"tensor 'sin' is on cuda:0.*sin\.cpu\(\)"):
        pev.certify(SPEC, {"cos": cos, "sin": FakeCuda()})


@pytest.mark.parametrize("tensors,needle", [
    ({"nothing": np.zeros(3, np.float32)}, "cos"),
    ({"cos": np.zeros((4, 31), np.float32), "sin": np.zeros((4, 31), np.float32)}, "31"),
    ({"cos": np.zeros((4, 32), np.int8), "sin": np.zeros((4, 32), np.int8)}, "int8"),
    ({"cos": "text", "sin": np.zeros((4, 32), np.float32)}, "cos"),
])
def test_bad_tensors_are_errors_naming_them(tensors, needle):
    with pytest.raises(pev.Error) as e:
        pev.certify(SPEC, tensors)
    assert needle in str(e.value)


def test_options_are_checked_by_keyword():
    cos, sin = hf_table(np.arange(8))
    with pytest.raises(pev.Error, match="^libm: "):
        pev.certify(SPEC, {"cos": cos, "sin": sin}, libm="musl")
    with pytest.raises(pev.Error, match="max_position"):
        pev.certify(SPEC, {"cos": cos, "sin": sin}, max_position=10)


def test_load_reads_a_dump(tmp_path):
    cos, sin = hf_table(np.arange(8))
    tensors, meta = pev.load(*save_npy({"cos": cos, "sin": sin}, tmp_path))
    assert tensors["cos"].tobytes() == cos.tobytes() and meta == {}


def test_a_safetensors_dump_names_its_spec(tmp_path, cli):
    f = tmp_path / "c.safetensors"
    assert cli("compute", "--strategy", "hf", "--spec", SPEC, "--positions", "0:100",
               "--format", "safetensors", "--out", f).returncode == 0
    cert = pev.certify(None, f, recipe="hf")
    assert cert.ok and cert.spec == pev.Spec(SPEC).text
    assert cert.inputs[0].format == "safetensors"
    tensors, meta = pev.load(f)
    assert meta["spec"] == pev.Spec(SPEC).text and set(tensors) == {"cos", "sin", "positions"}
