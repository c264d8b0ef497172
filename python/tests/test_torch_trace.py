"""pev.torch.trace and pev.certify of a model trace (docs/python.md §9, docs/certify.md §8.1), on
the small PyTorch models of python/tests/models (every family, genuine and with each planted
integration mistake).

Three groups:
  * the trace's contents, checked directly (names, shapes, layouts, position ids for a left-padded
    batch and for packed sequences, NoPE layers as none, bf16 encodings, learned tables);
  * every layer certified with pev's single-encoding certification (pev.certify(Spec, q/k dump),
    the per-layer spec written out here from the config): genuine models certified layer by
    layer, each planted mistake not certified at exactly the layers it touches;
  * end to end, pev.certify(config, trace) — the trace engine of `pev certify --config C --impl
    TRACE`: genuine models certified, each planted mistake named at exactly its layers.
"""

import json
import subprocess
import sys
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import pev  # noqa: E402
import pev.torch  # noqa: E402
import models  # noqa: E402
from models import hf_style  # noqa: E402

# ---- Inputs --------------------------------------------------------------------------------------

PAD = 3  # left padding of batch row 1


def batch_inputs(t=9):
    """input_ids [2, t] and an attention mask whose row 1 is left-padded by PAD tokens."""
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, 256, (2, t), generator=g)
    mask = torch.ones(2, t, dtype=torch.int64)
    mask[1, :PAD] = 0
    return ids, mask


PACKED = (5, 7)  # two sequences packed into one batch of 12 tokens


def packed_inputs():
    """Flattened input_ids [12] and positions [12] restarting at each packed sequence."""
    g = torch.Generator().manual_seed(2)
    ids = torch.randint(0, 256, (sum(PACKED),), generator=g)
    return ids, torch.cat([torch.arange(n) for n in PACKED])


def mrope_positions():
    """position_ids [3, 1, 12] of Qwen3-VL: 4 text tokens, a 2 × 3 image at t = 4 (h, w along the
    grid), 2 text tokens after it (every stream at max + 1)."""
    t, h, w = list(range(4)), list(range(4)), list(range(4))
    for r in range(2):
        for c in range(3):
            t.append(4)
            h.append(4 + r)
            w.append(4 + c)
    for p in (7, 8):
        t.append(p)
        h.append(p)
        w.append(p)
    return torch.tensor([t, h, w], dtype=torch.int64)[:, None, :]


def take_trace(name, mistakes=(), dtype=torch.float32, packed=None):
    """The trace of model `name` on its family's inputs: engines a packed batch, Qwen3-VL an image
    and text, the others a left-padded batch of two — or, with `packed` (the default for the
    mistake packed-no-restart), two sequences packed into a batch of one with restarting
    position_ids [1, 12], as transformers takes packed sequences."""
    model = models.build(name, mistakes, dtype=dtype)
    kind = models.structure(name)
    if packed is None:
        packed = "packed-no-restart" in mistakes
    if kind == "engine":
        ids, pos = packed_inputs()
        return pev.torch.trace(model, ids, position_ids=pos)
    if packed:
        ids, pos = packed_inputs()
        return pev.torch.trace(model, ids[None], position_ids=pos[None])
    if name == "qwen3_vl":
        ids = torch.randint(0, 256, (1, 12), generator=torch.Generator().manual_seed(3))
        return pev.torch.trace(model, ids, position_ids=mrope_positions())
    ids, mask = batch_inputs()
    return pev.torch.trace(model, ids, attention_mask=mask)


# ---- The trace's contents ------------------------------------------------------------------------


def test_transformers_style_names_shapes_and_left_padding():
    trace = take_trace("llama3")
    assert trace.layers == [0, 1]
    assert trace.num_layers == 2
    assert set(trace.keys()) == {"position_ids", "attention_mask"} | {
        f"layers.{i}.{r}" for i in (0, 1) for r in ("q_in", "q_out", "k_in", "k_out")}
    assert trace["layers.0.q_in"].shape == (2, 4, 9, 32)  # [B, H, T, D] as query_states
    assert trace["layers.0.k_out"].shape == (2, 2, 9, 32)
    # Positions derived from the mask as transformers derives them: row 1 restarts at its first
    # real token, its padding holds 1.
    np.testing.assert_array_equal(trace.position_ids[0], np.arange(9))
    np.testing.assert_array_equal(trace.position_ids[1], [1, 1, 1, 0, 1, 2, 3, 4, 5])
    np.testing.assert_array_equal(trace.attention_mask[1], [0, 0, 0, 1, 1, 1, 1, 1, 1])
    # And passed to the model: row 1's first real token is at position 0, where the rotation is
    # the identity; row 0's token 3 is at position 3 and is rotated.
    q_in, q_out = trace["layers.0.q_in"], trace["layers.0.q_out"]
    np.testing.assert_array_equal(q_out[1, :, PAD], q_in[1, :, PAD])
    np.testing.assert_array_equal(q_out[0, :, 0], q_in[0, :, 0])
    assert not np.array_equal(q_out[0, :, PAD], q_in[0, :, PAD])
    # The rotation keeps each pair's norm (NeoX pairs (j, j + 16)).
    def norms(x):
        return np.hypot(x[..., :16], x[..., 16:])

    np.testing.assert_allclose(norms(q_out), norms(q_in), rtol=1e-5)


def test_position_ids_given_are_recorded_and_used():
    model = models.build("llama3")
    ids, _ = batch_inputs()
    pos = torch.tensor([[10, 11, 12, 13, 14, 15, 16, 17, 18], [0, 1, 2, 3, 0, 1, 2, 3, 4]])
    trace = pev.torch.trace(model, ids, position_ids=pos)
    np.testing.assert_array_equal(trace.position_ids, pos.numpy())
    assert "attention_mask" not in trace
    q_in, q_out = trace["layers.1.q_in"], trace["layers.1.q_out"]
    for t in (0, 4):  # row 1 restarts at 0 at tokens 0 and 4
        np.testing.assert_array_equal(q_out[1, :, t], q_in[1, :, t])
    assert not np.array_equal(q_out[0, :, 0], q_in[0, :, 0])


def test_engine_style_packed_sequences_restart():
    trace = take_trace("glm4_moe")
    np.testing.assert_array_equal(trace.position_ids, [0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 5, 6])
    assert trace["layers.0.q_in"].shape == (12, 4 * 32)  # vLLM's [T, H·D]
    assert trace["layers.0.k_in"].shape == (12, 2 * 32)
    q_in, q_out = trace["layers.1.q_in"], trace["layers.1.q_out"]
    # The rotary module rotates in place: the tracer kept copies of its inputs.
    assert not np.array_equal(q_in, q_out)
    for t in (0, PACKED[0]):  # each packed sequence starts at position 0: the identity
        np.testing.assert_array_equal(q_out[t], q_in[t])
    # Partial rotary 0.5: channels 16 … 31 of every head pass through bit for bit.
    heads_in, heads_out = q_in.reshape(12, 4, 32), q_out.reshape(12, 4, 32)
    np.testing.assert_array_equal(heads_out[..., 16:], heads_in[..., 16:])
    assert not np.array_equal(heads_out[1:5, :, :16], heads_in[1:5, :, :16])


@pytest.mark.parametrize("name", ["llama3", "deepseek_v3"])
def test_transformers_style_packed_sequences(name):
    trace = take_trace(name, packed=True)
    np.testing.assert_array_equal(trace.position_ids, [[0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 5, 6]])
    q_in, q_out = trace["layers.0.q_in"], trace["layers.0.q_out"]
    if name == "llama3":  # DeepSeek's output is in half-split order: not comparable element-wise
        np.testing.assert_array_equal(q_out[0, :, PACKED[0]], q_in[0, :, PACKED[0]])
    verdicts = layer_verdicts(name, trace)
    assert all(v == "certified" for v in verdicts.values()), verdicts


def test_record_around_the_engine_loop():
    """pev.torch.record around a forward the engine runs itself: positions taken from what the
    rotary modules received; the same trace as pev.torch.trace."""
    model = models.build("qwen3_next")
    ids, pos = packed_inputs()
    with pev.torch.record(model) as recording, torch.no_grad():
        model(ids, pos)
        model(ids, pos + 100)  # a second forward: the first call of each layer is kept
    got = recording.trace()
    want = pev.torch.trace(model, ids, position_ids=pos)
    assert set(got.keys()) == set(want.keys())
    for name in want.keys():
        np.testing.assert_array_equal(got[name], want[name])
    with pytest.raises(pev.Error, match="position_ids"):
        with pev.torch.record(models.build("llama3")) as r:
            pass
        r.trace()


def test_packed_mistake_shows_in_the_trace():
    trace = take_trace("glm4_moe", {"packed-no-restart"})
    q_in, q_out = trace["layers.0.q_in"], trace["layers.0.q_out"]
    assert not np.array_equal(q_out[PACKED[0]], q_in[PACKED[0]])  # rotated by position 5, not 0


@pytest.mark.parametrize("name, none", [("smollm3", [3]), ("llama4", [3]),
                                        ("qwen3_next", [0, 1, 2])])
def test_layers_without_rotation_are_recorded_as_none(name, none):
    trace = take_trace(name)
    for i in trace.layers:
        if i in none:
            assert f"layers.{i}.none" in trace and not trace.rotated(i)
            assert trace[f"layers.{i}.none"].shape == ()
            assert not any(k.startswith(f"layers.{i}.q") for k in trace.keys())
        else:
            assert trace.rotated(i) and f"layers.{i}.q_out" in trace


def test_rope_on_nope_records_a_rotation():
    trace = take_trace("smollm3", {"rope-on-nope"})
    assert trace.rotated(3)


def test_llama4_records_q_as_the_model_holds_it():
    trace = take_trace("llama4")
    assert trace["layers.0.q_in"].shape == (2, 9, 4, 32)  # [B, T, H, D]: apply_rotary_emb's xq


def test_mrope_position_ids_are_three_dimensional():
    trace = take_trace("qwen3_vl")
    assert trace.position_ids.shape == (3, 1, 12)
    np.testing.assert_array_equal(trace.position_ids, mrope_positions().numpy())


def test_bf16_is_recorded_as_uint16_encodings():
    model = models.build("llama3", dtype=torch.bfloat16)
    ids, mask = batch_inputs()
    seen = {}

    def keep(module, args, out):
        seen["x"] = out

    handle = model.embed_tokens.register_forward_hook(keep)
    trace = pev.torch.trace(model, ids, attention_mask=mask, tables=True)
    handle.remove()
    q = trace["layers.0.q_out"]
    assert q.dtype == np.uint16 and trace.dtypes["layers.0.q_out"] == "torch.bfloat16"
    assert trace["layers.0.cos"].dtype == np.uint16 and trace["layers.0.cos"].shape == (2, 9, 32)
    # The encodings decode to the model's values.
    back = torch.from_numpy(q.view(np.int16)).view(torch.bfloat16).float()
    q_ref = model.layers[0].self_attn.q_proj(seen["x"]).view(2, 9, 4, 32).transpose(1, 2)
    q_ref = hf_style.apply_rotary_pos_emb(
        q_ref, q_ref[:, :2], *models.rope.cos_sin(models.config("llama3"),
                                                  torch.as_tensor(trace.position_ids),
                                                  torch.bfloat16))[0]
    assert torch.equal(back, q_ref.float())


@pytest.mark.parametrize("name, offset", [("gpt2", 0), ("opt", 2)])
def test_learned_table_and_positions(name, offset):
    model = models.build(name)
    trace = take_trace(name)
    table = trace["embed.table"]
    weight = (model.transformer.wpe if name == "gpt2" else model.decoder.embed_positions).weight
    np.testing.assert_array_equal(table, weight.detach().numpy())
    pos = trace.position_ids
    np.testing.assert_array_equal(trace["embed.positions"], table[pos + offset])
    assert all(not trace.rotated(i) for i in trace.layers)  # their layers rotate nothing
    if name == "opt":
        wrong = take_trace("opt", {"opt-offset"})
        np.testing.assert_array_equal(wrong["embed.positions"], table[pos])


def test_save_is_read_by_pev(tmp_path):
    trace = take_trace("qwen3_next", dtype=torch.bfloat16)
    path = trace.save(tmp_path / "trace.npz")  # a path without .npz: safetensors (test_trace_files)
    assert path.endswith(".npz")
    tensors, _ = pev.load(path)  # pev's own dump reader
    assert set(tensors) == set(trace.keys())
    for name, a in trace.tensors.items():
        np.testing.assert_array_equal(tensors[name], a)
    back = pev.torch.Trace.load(path)
    assert set(back.keys()) == set(trace.keys())


def test_functions_are_restored_even_after_an_exception():
    model = models.build("llama3")
    original = hf_style.apply_rotary_pos_emb
    ids, _ = batch_inputs()
    with pytest.raises(RuntimeError):
        pev.torch.trace(model, ids, position_ids=torch.zeros(3, 3, dtype=torch.int64))
    assert hf_style.apply_rotary_pos_emb is original
    pev.torch.trace(model, ids)
    assert hf_style.apply_rotary_pos_emb is original
    assert not model.layers[0]._forward_pre_hooks and not model.layers[0]._forward_hooks


def test_layers_must_be_found():
    with pytest.raises(pev.Error, match="layers="):
        pev.torch.trace(torch.nn.Linear(2, 2), torch.zeros(1, 2))


def test_pev_imports_without_torch():
    code = ("import sys; sys.modules['torch'] = None\n"
            "import pev, pev.torch\n"
            "try:\n    pev.torch.trace(None, None)\n"
            "except pev.Error as e:\n    print('refused:', e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "refused: pev.torch needs PyTorch" in r.stdout


# ---- Every layer against its own encoding, with pev's single-encoding certification ------------


def layer_spec(name, i):
    """The encoding the config gives layer i (None: NoPE), written out here from the families'
    rules (docs/encodings.md §7.2): Gemma-3's layer types by pev's own per-type reading, OLMo-3's
    sliding layers the default RoPE at rope_theta, Qwen3-VL's text config."""
    cfg = models.config(name)
    if not hf_style.rope_layers(cfg)[i]:
        return None
    kind = hf_style.layer_types(cfg)[i]
    if name == "gemma3":
        return pev.Spec(cfg, layer_type=kind)
    if name == "olmo3" and kind == "sliding_attention":
        return pev.Spec("rope:head_dim=32,rope_theta=500000")
    return pev.Spec(cfg)


def layer_verdicts(name, trace):
    """Layer → "certified", "not certified", "none" (NoPE, not rotated), "rotated where NoPE",
    "not rotated where RoPE"."""
    out = {}
    pos_name = "position_ids" if trace.position_ids.ndim > 1 else "positions"
    for i in range(trace.num_layers):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pev.PevWarning)
            spec = layer_spec(name, i)
        if spec is None:
            moved = trace.rotated(i) and not np.array_equal(trace[f"layers.{i}.q_in"],
                                                          trace[f"layers.{i}.q_out"])
            out[i] = "rotated where NoPE" if moved else "none"
            continue
        if not trace.rotated(i):
            out[i] = "not rotated where RoPE"
            continue
        dump = {r: trace[f"layers.{i}.{r}"] for r in ("q_in", "q_out", "k_in", "k_out")}
        dump[pos_name] = trace.position_ids
        cert = pev.certify(spec, dump)
        out[i] = "certified" if cert.certified else "not certified"
    return out


def affected_layers(name, mistake):
    """The layers a planted mistake changes."""
    cfg = models.config(name)
    use = hf_style.rope_layers(cfg)
    types = hf_style.layer_types(cfg)
    attention = [t != "linear_attention" for t in types]
    rope = {i for i, u in enumerate(use) if u}
    nope = {i for i, (u, a) in enumerate(zip(use, attention)) if a and not u}
    if mistake == "rope-on-nope":
        return nope
    if mistake == "nope-on-rope":
        return rope
    if mistake == "no-rope-inverted":
        return rope | nope
    if mistake == "sliding-global" or (name == "olmo3" and mistake.startswith("attn-factor")):
        # OLMo-3's sliding layers use the default RoPE (attention factor 1): only its full layers
        # carry the factor; the mistake sliding-global changes the sliding layers.
        want = "sliding_attention" if mistake == "sliding-global" else "full_attention"
        return {i for i in rope if types[i] == want}
    return rope


ROTARY = [n for n in models.CONFIGS if models.structure(n) != "learned"]
PLANTED = [(n, m) for n in ROTARY for m in models.APPLICABLE[n]]


@pytest.mark.parametrize("name", ROTARY)
def test_genuine_layers_certified(name):
    verdicts = layer_verdicts(name, take_trace(name))
    nope = {i for i, u in enumerate(hf_style.rope_layers(models.config(name))) if not u}
    assert {i for i, v in verdicts.items() if v == "none"} == nope, verdicts
    assert all(v in ("certified", "none") for v in verdicts.values()), verdicts


@pytest.mark.parametrize("name, mistake", PLANTED)
def test_planted_mistake_caught_at_its_layers(name, mistake):
    verdicts = layer_verdicts(name, take_trace(name, {mistake}))
    wrong = {i for i, v in verdicts.items() if v not in ("certified", "none")}
    assert wrong == affected_layers(name, mistake), verdicts


# ---- End to end: pev.certify(config, trace) (the trace engine) ---------------------------------


@pytest.mark.parametrize("name", list(models.CONFIGS))
def test_engine_genuine_certified(name, pev_certify_trace):
    pev_certify_trace(models.config(name), take_trace(name))


# The name pev gives each planted mistake (docs/certify.md §8.3; the catalogue's ids,
# docs/encodings.md §10.2). A mistake the data cannot tell from another is named by either: the
# layer's findings list the other as indistinguishable or also within the threshold (OLMo-3's
# attention factor 1 + 0.1·ln 8 squared is also ggml's attn_factor not divided by it).
NAMED = {
    "rope-on-nope": {"rope-on-nope-layer"},
    "nope-on-rope": {"rope-layer-not-rotated"},
    "no-rope-inverted": {"rope-on-nope-layer", "rope-layer-not-rotated"},
    "sliding-global": {"rope-of-other-layer-type"},
    "partial-full": {"partial-rotary-full"},
    "freq-head-dim": {"rotary-freq-over-head-dim"},
    "mrope-hw-swapped": {"mrope-hw-swapped"},
    "mrope-blocked": {"mrope-interleave-flipped"},
    "batch-row0": {"batch-row-positions"},
    "packed-no-restart": {"packed-positions-not-restarting"},
    "attn-factor-squared": {"attention-factor-twice"},
    "attn-factor-dropped": {"attention-factor-missing"},
    "opt-offset": {"learned-offset"},
}


def layer_rows(cert):
    return json.loads(cert.json)["model"]["layers"]


@pytest.mark.parametrize("name, mistake", [(n, m) for n in models.CONFIGS
                                           for m in models.APPLICABLE[n]])
def test_engine_planted_mistake_named(name, mistake):
    """Not certified; exactly the layers the mistake touches fail, each named as the mistake."""
    cert = pev.certify(models.config(name), take_trace(name, {mistake}))
    assert not cert.ok and not cert.certified
    rows = layer_rows(cert)
    failing = {(r["index"], r["site"]) for r in rows if r["grade"] == "not certified"}
    if name == "opt":
        assert failing == {(-1, "embed")}, str(cert)
    else:
        assert failing == {(i, "") for i in affected_layers(name, mistake)}, str(cert)
    for r in rows:
        if r["grade"] != "not certified":
            continue
        tied = {f.split(": ", 1)[1] for f in r["findings"]
                if f.startswith(("indistinguishable on this data: ",
                                 "also within the threshold: "))}
        tied = {x for t in tied for x in t.split(", ")}
        named = {r["named"]} | tied
        assert named & NAMED[mistake], f"layer {r['index']}: {r['named']} {r['findings']}\n{cert}"


def test_engine_cli_reads_the_saved_trace(tmp_path, cli):
    trace = take_trace("gemma3")
    (tmp_path / "config.json").write_text(json.dumps(models.config("gemma3")))
    path = trace.save(tmp_path / "trace.npz")
    r = cli("certify", "--config", tmp_path / "config.json", "--impl", path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert pev.certify(str(tmp_path / "config.json"), trace).ok
    # The saved file too, as pev certify reads it: layer by layer, one row per layer.
    cert = pev.certify(str(tmp_path / "config.json"), str(path))
    assert cert.ok and len(layer_rows(cert)) == 6
    planted = take_trace("gemma3", {"sliding-global"}).save(tmp_path / "planted.npz")
    cert = pev.certify(models.config("gemma3"), [str(planted)])
    assert not cert.ok and layer_rows(cert)[0]["named"] == "rope-of-other-layer-type"


def test_certify_trace_needs_a_config_or_a_spec():
    # A SPEC certifies every layer against that one encoding (test_certify_request.py).
    with pytest.raises(pev.Error, match="config"):
        pev.certify(None, pev.torch.Trace({}))


def test_certify_trace_refuses_positions():
    with pytest.raises(pev.Error, match="positions"):
        pev.certify(models.config("llama3"), pev.torch.Trace({}), positions=range(4))


def test_fixture_traces_the_model(pev_certify_trace):
    """The fixture traces a model given with its inputs and returns the certificate when it holds;
    trace arguments with a Trace already made are a TypeError."""
    ids, mask = batch_inputs()
    cert = pev_certify_trace(models.config("llama3"), models.build("llama3"), ids,
                             attention_mask=mask)
    assert cert.ok and len(layer_rows(cert)) == 2
    with pytest.raises(TypeError):
        pev_certify_trace(models.config("llama3"), take_trace("llama3"), ids)


def test_engine_fixture_fails_with_the_text(pev_certify_trace):
    model = models.build("gemma3", {"sliding-global"})
    ids, mask = batch_inputs()
    with pytest.raises(pev.testing.CertificationError) as e:
        pev_certify_trace(models.config("gemma3"), model, ids, attention_mask=mask)
    assert "pev-trace-certificate-1" in str(e.value)
    assert not e.value.certificate.ok


@pytest.mark.parametrize("name", ["llama3", "gemma3", "olmo3"])
def test_engine_tables_only_trace(name):
    """A trace of the cos/sin each layer used (tables=True, without q/k): every layer's table is
    certified under its own encoding, and a sliding layer's table with the global θ is named."""
    ids, mask = batch_inputs()
    for mistakes, ok in (((), True), (("sliding-global",), False)):
        if mistakes and name == "llama3":
            continue
        full = pev.torch.trace(models.build(name, set(mistakes)), ids, attention_mask=mask,
                               tables=True)
        tables = pev.torch.Trace({k: v for k, v in full.tensors.items()
                                  if not k.endswith(("q_in", "q_out", "k_in", "k_out"))})
        cert = pev.certify(models.config(name), tables)
        rows = layer_rows(cert)
        assert cert.ok == ok, str(cert)
        assert all("rope table" in r["read"] for r in rows if r["spec"] != "none")
        if not ok:
            named = {r["named"] for r in rows if r["grade"] == "not certified"}
            assert named == {"rope-of-other-layer-type"}, str(cert)
