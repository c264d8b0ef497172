"""A model trace from pev.torch that cannot be fooled (issue 34; docs/python.md §9): every rotary
call recorded (q/k rotated twice fail their layer as rotated-twice; q then k in two calls of one
tensor each is one site), the attention's use of the rotation checked (a discarded result fails as
rotation-discarded), a layer with no rotary call says what the tracer watched, the tracer's notes
and findings on the certificate, the Trace saved as safetensors (no 1 GiB limit; bf16 as BF16;
verdicts as from the npz), and an unusable TMPDIR a pev.Error naming it."""

import errno
import json
import os
import struct
import tempfile

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import pev  # noqa: E402
import pev.testing  # noqa: E402
import pev.torch  # noqa: E402
import models  # noqa: E402
from models import engine_style, hf_style  # noqa: E402

# The tracer patches the rotary functions in the modules defining the layers' classes: the
# attentions below live here, so this module's apply_rotary_pos_emb is the one they call.
apply_rotary_pos_emb = hf_style.apply_rotary_pos_emb


def rope_one(x, cos, sin, unsqueeze_dim=1):
    """Gemma-3n's apply_rotary_pos_emb(x, cos, sin): one tensor a call (q, then k)."""
    cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)
    return x * cos + hf_style.rotate_half(x) * sin


def my_rope(q, k, cos, sin):
    """A rotation under a name the tracer does not watch by default."""
    return rope_one(q, cos, sin), rope_one(k, cos, sin)


class RotatesTwice(hf_style.Attention):
    def rotate(self, q, k, cos, sin):
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        return apply_rotary_pos_emb(q, k, cos, sin)  # q/k rotated by 2θ


class DiscardsTheResult(hf_style.Attention):
    def rotate(self, q, k, cos, sin):
        apply_rotary_pos_emb(q, k, cos, sin)  # as if it rotated in place
        return q, k


class OneTensorACall(hf_style.Attention):
    def rotate(self, q, k, cos, sin):
        return rope_one(q, cos, sin), rope_one(k, cos, sin)


class UnknownFunction(hf_style.Attention):
    def rotate(self, q, k, cos, sin):
        return my_rope(q, k, cos, sin)


class EngineRotatesTwice(engine_style.Attention):
    def forward(self, positions, x):
        q, k, v = self.qkv_proj(x).split(self.sizes, dim=-1)
        q, k = q.contiguous(), k.contiguous()
        q, k = self.rotary_emb(positions, q, k)
        q, k = self.rotary_emb(positions, q, k)  # in place, again
        t = x.shape[0]
        qh = q.view(t, self.heads, self.head_dim).transpose(0, 1)[None]
        kh = k.view(t, self.kv_heads, self.head_dim).transpose(0, 1)[None]
        vh = v.reshape(t, self.kv_heads, self.head_dim).transpose(0, 1)[None]
        mask = torch.ones(t, t, dtype=torch.bool).tril()[None, None]
        return self.o_proj(hf_style._attend(qh, kh, vh, mask)[0].transpose(0, 1).reshape(t, -1))


def hf_model(attention=None, layers=None, name="llama3", dtype=torch.float32):
    model = models.build(name, dtype=dtype)
    for i, layer in enumerate(model.layers):
        if attention is not None and (layers is None or i in layers):
            layer.self_attn.__class__ = attention
    return model


def hf_trace(model, **kwargs):
    ids = torch.randint(0, 256, (2, 9), generator=torch.Generator().manual_seed(1))
    mask = torch.ones(2, 9, dtype=torch.int64)
    mask[1, :3] = 0
    return pev.torch.trace(model, ids, attention_mask=mask, **kwargs)


def layer_rows(cert):
    d = cert.to_dict()
    for key in ("model", "certification"):
        if isinstance(d.get(key), dict) and "layers" in d[key]:
            return {l["index"]: l for l in d[key]["layers"]}
    return {l["index"]: l for l in d["layers"]}


CONFIG = models.config("llama3")


# ---- Every rotary call recorded -------------------------------------------------------------------


def test_a_layer_that_rotates_twice_fails_as_rotated_twice(pev_certify_trace):
    trace = hf_trace(hf_model(RotatesTwice, layers={1}))
    assert trace.findings.keys() == {1} and trace.findings[1][0] == "rotated-twice"
    cert = pev.certify(CONFIG, trace)
    assert not cert.ok and cert.exit_code == 1 and cert.grade == "not certified"
    layers = layer_rows(cert)
    assert layers[1]["named"] == "rotated-twice"
    assert layers[0]["grade"] != "not certified" and not layers[0].get("named")
    assert any("rotated-twice" in n and "called 2 times" in n for n in cert.notes)
    assert "rotated-twice" in str(cert)
    with pytest.raises(pev.testing.CertificationError, match="rotated-twice"):
        pev_certify_trace(CONFIG, trace)


def test_a_saved_trace_keeps_the_tracers_findings_for_the_cli(tmp_path, cli):
    # The tracer's findings travel in the saved file's metadata: `pev certify` of the file names
    # the layer as pev.certify of the Trace does (docs/certify.md §8.1).
    trace = hf_trace(hf_model(RotatesTwice, layers={1}))
    path = trace.save(tmp_path / "trace.safetensors")
    config = tmp_path / "config.json"
    config.write_text(json.dumps(CONFIG) if isinstance(CONFIG, dict) else open(CONFIG).read())
    r = cli("certify", "--config", config, "--impl", path, "--out", tmp_path / "cert")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "layer 1: rotated-twice" in r.stdout, r.stdout


def test_an_engine_rotary_module_called_twice_fails_as_rotated_twice():
    model = models.build("glm4_moe")
    model.layers[0].self_attn.__class__ = EngineRotatesTwice
    ids = torch.randint(0, 256, (12,), generator=torch.Generator().manual_seed(2))
    pos = torch.cat([torch.arange(5), torch.arange(7)])
    cert = pev.certify(models.config("glm4_moe"), pev.torch.trace(model, ids, position_ids=pos))
    assert not cert.ok
    layers = layer_rows(cert)
    assert layers[0]["named"] == "rotated-twice"
    assert layers[1]["grade"] != "not certified"


def test_q_then_k_in_two_calls_of_one_tensor_is_one_site_and_certified(pev_certify_trace):
    trace = hf_trace(hf_model(OneTensorACall), functions=("rope_one",))
    assert not trace.findings
    assert trace["layers.0.k_in"].shape == (2, 2, 9, 32)  # k's heads: the second call
    assert trace["layers.0.q_in"].shape == (2, 4, 9, 32)
    pev_certify_trace(CONFIG, trace)


# ---- The attention's use of the rotation ---------------------------------------------------------


def test_a_discarded_rotation_fails_as_rotation_discarded(pev_certify_trace):
    trace = hf_trace(hf_model(DiscardsTheResult, layers={0}))
    assert trace.findings.keys() == {0} and trace.findings[0][0] == "rotation-discarded"
    # Recorded as the attention got them: unrotated.
    np.testing.assert_array_equal(trace["layers.0.q_out"], trace["layers.0.q_in"])
    cert = pev.certify(CONFIG, trace)
    assert not cert.ok
    layers = layer_rows(cert)
    assert layers[0]["named"] == "rotation-discarded"
    assert layers[1]["grade"] != "not certified"
    with pytest.raises(pev.testing.CertificationError, match="rotation-discarded"):
        pev_certify_trace(CONFIG, trace)


@pytest.mark.parametrize("name", ["llama3", "gemma3", "llama4", "deepseek_v3", "qwen3_next",
                                  "glm4_moe", "phi4_mini", "qwen3_vl"])
def test_genuine_models_have_no_findings(name):
    from test_torch_trace import take_trace

    trace = take_trace(name)
    assert trace.findings == {}
    assert not any("called" in n for n in trace.notes)


# ---- No rotary call seen -------------------------------------------------------------------------


def test_a_layer_without_a_rotary_call_says_what_the_tracer_watched():
    trace = hf_trace(hf_model(UnknownFunction))
    cert = pev.certify(CONFIG, trace)
    assert not cert.ok
    note = next(n for n in cert.notes if n.startswith("no rotary call was seen"))
    assert "layers 0, 1" in note
    assert "functions=(apply_rotary_pos_emb, apply_rotary_pos_emb_interleave" in note
    assert "rotary='rotary_emb'" in note
    assert "apply_rotary_pos_emb" in note.split("found:")[1]
    assert "no rotary call was seen in this layer (the tracer watched functions=(" in str(cert)
    with pytest.raises(pev.testing.CertificationError) as e:
        pev.testing.assert_certified(cert)
    assert "note: " + note in str(e.value)
    # Named, it is recorded and certified.
    assert pev.certify(CONFIG, hf_trace(hf_model(UnknownFunction), functions=("my_rope",))).ok


# ---- Saved as safetensors ------------------------------------------------------------------------


def safetensors_header(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return json.loads(f.read(n))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_save_writes_safetensors_that_pev_reads_as_the_trace(dtype, tmp_path):
    trace = hf_trace(hf_model(dtype=dtype))
    path = trace.save(tmp_path / "trace")
    assert path.endswith(".safetensors")
    header = safetensors_header(path)
    want = {torch.float32: "F32", torch.bfloat16: "BF16"}[dtype]
    assert header["layers.0.q_in"]["dtype"] == want
    assert header["position_ids"]["dtype"] == "I64"
    tensors, meta = pev.load(path)
    assert set(tensors) == set(trace.keys())
    for name, a in trace.tensors.items():
        assert tensors[name].dtype == a.dtype
        np.testing.assert_array_equal(tensors[name], a)
    back = pev.torch.Trace.load(path)
    assert back.dtypes == trace.dtypes and back.num_layers == trace.num_layers


@pytest.mark.parametrize("mistakes", [(), ("batch-row0",)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_verdicts_from_safetensors_are_those_from_the_npz(mistakes, dtype, tmp_path):
    model = models.build("gemma3", set(mistakes), dtype=dtype)
    trace = hf_trace(model)
    npz = pev.certify(models.config("gemma3"), trace.save(tmp_path / "t.npz"))
    st = pev.certify(models.config("gemma3"), trace.save(tmp_path / "t.safetensors"))
    mem = pev.certify(models.config("gemma3"), trace)
    for c in (st, mem):
        assert (c.grade, c.exit_code) == (npz.grade, npz.exit_code)
        assert [(l["index"], l["grade"], l.get("named")) for l in layer_rows(c).values()] == [
            (l["index"], l["grade"], l.get("named")) for l in layer_rows(npz).values()]
    assert any(i["path"].endswith("trace.safetensors") for i in mem.inputs)


def test_save_refuses_uint16_declared_as_another_dtype(tmp_path):
    t = pev.torch.Trace({"position_ids": np.arange(4)[None], "layers.0.none": np.array(1)},
                        dtypes={})
    t.tensors["layers.0.q_in"] = np.zeros((1, 1, 4, 2), np.uint16)
    t.dtypes["layers.0.q_in"] = "torch.uint16"
    with pytest.raises(pev.Error, match="uint16 data declared torch.uint16"):
        t.save(tmp_path / "x")


@pytest.mark.skipif(not os.environ.get("PEV_BIG_TRACE"),
                    reason="a trace over 1 GiB: set PEV_BIG_TRACE=1 (needs ~4 GiB of memory)")
def test_a_trace_over_one_gib_is_certified(tmp_path):
    trace = big_trace()
    assert sum(a.nbytes for a in trace.tensors.values()) > 2**30
    cert = pev.certify(CONFIG, trace)
    assert cert.ok, str(cert)


def big_trace(rows=3, t=131072):
    """A genuine llama3 trace of rows × t tokens (> 1 GiB of fp32 q/k): q/k random, rotated by
    the test models' own rotation (hf_style.apply_rotary_pos_emb with models.rope's cos/sin)."""
    from models import rope

    cfg = CONFIG
    g = torch.Generator().manual_seed(5)
    pos = torch.arange(t).expand(rows, t)
    tensors = {"position_ids": pos.numpy().copy()}
    for i in range(cfg["num_hidden_layers"]):
        q = torch.randn(rows, 4, t, 32, generator=g)
        k = torch.randn(rows, 2, t, 32, generator=g)
        qo, ko = torch.empty_like(q), torch.empty_like(k)
        for a in range(0, t, 8192):
            cos, sin = rope.cos_sin(cfg, pos[:, a:a + 8192], torch.float32, "full_attention",
                                    frozenset())
            qo[:, :, a:a + 8192], ko[:, :, a:a + 8192] = hf_style.apply_rotary_pos_emb(
                q[:, :, a:a + 8192], k[:, :, a:a + 8192], cos, sin)
        for role, x in (("q_in", q), ("q_out", qo), ("k_in", k), ("k_out", ko)):
            tensors[f"layers.{i}.{role}"] = x.numpy()
    return pev.torch.Trace(tensors, num_layers=cfg["num_hidden_layers"])


# ---- TMPDIR --------------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["/nonexistent/pev-tmp", "/etc/hostname"])
def test_an_unusable_tmpdir_is_an_error_naming_it(where, monkeypatch):
    trace = hf_trace(hf_model())
    monkeypatch.setattr(tempfile, "tempdir", where)
    with pytest.raises(pev.Error, match=r"^TMPDIR: .*" + where):
        pev.certify(CONFIG, trace)


def test_a_full_tmpdir_is_an_error_naming_it(monkeypatch):
    trace = hf_trace(hf_model())

    def full(self, path):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)

    monkeypatch.setattr(pev.torch.Trace, "save", full)
    with pytest.raises(pev.Error, match=r"^TMPDIR: .*No space left on device"):
        pev.certify(CONFIG, trace)
