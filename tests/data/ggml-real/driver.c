// Real ggml RoPE tables for pev's tests (tests/data/ggml-real/README.md).
//
// Tables: calls ggml's CPU ggml_rope_ext on unit vectors, x = (1, 0) in every rotated pair, so
// that the rotation's output is the pair's cache entry itself: y = (x0*cos - x1*sin, x0*sin +
// x1*cos) = (mscale*cos theta, mscale*sin theta) exactly, with or without FMA contraction. Writes
// a safetensors file with `table` [P, n_dims/2, 2] float32 (cos, sin: pev's `pairs` layout),
// `positions` [P] int64 and the claimed pev SPEC in the metadata.
// --qk f32|f16: rotated q/k instead: q_in [T, 1, d] and k_in [T, 1, d] of seeded normal values
// (in the type), q_out/k_out from ggml_rope_ext, positions [T] (every third table position).
// --bug ramp-off (ext_factor 0) | attn-not-divided (attn_factor = transformers' m, llama.cpp
// before it divided by the kernel's own YaRN factor): a planted mistake (tests expect not certified).
//
// Build (outside the pev tree), with the flags of the ggml build it links, so that host-side
// llama.cpp arithmetic (DeepSeek-V3's attn_factor) is compiled as that build would compile it:
//   cc -O3 -march=native [-ffp-contract=off] -I<ggml>/include driver.c
//      <build>/src/libggml.a <build>/src/libggml-cpu.a <build>/src/libggml-base.a -lstdc++ -lm -lpthread
// Run: driver <case> <out.safetensors> [--freqs rope_freqs.f32] [--qk f32|f16] [--bug B], case
// one of plain, llama3 (with --freqs: the file rope_freqs.py writes), yarn-qwen, yarn-deepseek.

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-cpu.h"
#include "ggml.h"

enum { NORMAL = 0, NEOX = 2 };

struct rope_case {
  const char* name;
  const char* spec;
  int n_dims, mode, n_ctx_orig;
  float freq_base, freq_scale, ext_factor, attn_factor, beta_fast, beta_slow;
  int llama3;  // per-pair rope_freqs (convert_hf_to_gguf.py's Llama-3 factors)
};

// Positions: 0 ... 255, then per octave [2^k, 2^(k+1)) for k = 8 ... 19 its first and last and
// 46 others (a fixed LCG), sorted within the octave, duplicates dropped: up to 2^20 - 1.
static int make_positions(int32_t* pos) {
  int n = 0;
  for (int p = 0; p < 256; ++p) pos[n++] = p;
  uint64_t s = 0x9E3779B97F4A7C15ull;
  for (int k = 8; k < 20; ++k) {
    const int32_t lo = 1 << k, hi = (1 << (k + 1)) - 1;
    const int first = n;
    pos[n++] = lo;
    pos[n++] = hi;
    for (int j = 0; j < 46; ++j) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      pos[n++] = lo + 1 + (int32_t)((s >> 33) % (uint64_t)(hi - lo - 1));
    }
    // insertion sort of the octave, duplicates dropped
    for (int a = first + 1; a < n; ++a) {
      const int32_t v = pos[a];
      int b = a - 1;
      while (b >= first && pos[b] > v) {
        pos[b + 1] = pos[b];
        --b;
      }
      pos[b + 1] = v;
    }
    int w = first + 1;
    for (int a = first + 1; a < n; ++a) {
      if (pos[a] != pos[w - 1]) pos[w++] = pos[a];
    }
    n = w;
  }
  return n;
}

struct tensor_out {
  const char* name;
  const char* dtype;
  int rank;
  int64_t shape[3];
  const void* data;
  size_t bytes;
};

/// A safetensors file: the header (tensors in the order given, metadata spec and made_by), then
/// the data.
static int write_safetensors(const char* path, const char* spec, const char* made_by,
                             const struct tensor_out* t, int n) {
  char hdr[4096];
  int w = snprintf(hdr, sizeof hdr, "{\"__metadata__\":{\"spec\":\"%s\",\"made_by\":\"%s\"}", spec,
                   made_by);
  size_t off = 0;
  for (int k = 0; k < n; ++k) {
    w += snprintf(hdr + w, sizeof hdr - (size_t)w, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[", t[k].name,
                  t[k].dtype);
    for (int r = 0; r < t[k].rank; ++r) {
      w += snprintf(hdr + w, sizeof hdr - (size_t)w, r ? ",%lld" : "%lld", (long long)t[k].shape[r]);
    }
    w += snprintf(hdr + w, sizeof hdr - (size_t)w, "],\"data_offsets\":[%zu,%zu]}", off,
                  off + t[k].bytes);
    off += t[k].bytes;
  }
  w += snprintf(hdr + w, sizeof hdr - (size_t)w, "}");
  while (w % 8 != 0) hdr[w++] = ' ';
  FILE* f = fopen(path, "wb");
  if (!f) return 1;
  const uint64_t len = (uint64_t)w;
  fwrite(&len, 8, 1, f);
  fwrite(hdr, 1, (size_t)w, f);
  for (int k = 0; k < n; ++k) fwrite(t[k].data, 1, t[k].bytes, f);
  fclose(f);
  return 0;
}

/// Seeded standard normal values (a fixed LCG, Box-Muller).
static uint64_t rng_state = 20261207;
static float normal(void) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  const double u1 = ((rng_state >> 11) + 1.0) / 9007199254740993.0;
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  const double u2 = (rng_state >> 11) / 9007199254740992.0;
  return (float)(sqrt(-2 * log(u1)) * cos(2 * M_PI * u2));
}

/// ggml_rope_ext of c on x with positions p (and rope_freqs ff), computed on one thread.
static struct ggml_tensor* rope(struct ggml_context* ctx, const struct rope_case* c,
                                struct ggml_tensor* x, struct ggml_tensor* p,
                                struct ggml_tensor* ff) {
  struct ggml_tensor* y =
      ggml_rope_ext(ctx, x, p, ff, c->n_dims, c->mode, c->n_ctx_orig, c->freq_base, c->freq_scale,
                    c->ext_factor, c->attn_factor, c->beta_fast, c->beta_slow);
  struct ggml_cgraph* g = ggml_new_graph(ctx);
  ggml_build_forward_expand(g, y);
  if (ggml_graph_compute_with_ctx(ctx, g, 1) != GGML_STATUS_SUCCESS) exit(1);
  return y;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr,
            "usage: %s plain|llama3|yarn-qwen|yarn-deepseek out.safetensors [--freqs F] [--qk "
            "f32|f16] [--bug ramp-off|attn-not-divided]\n",
            argv[0]);
    return 2;
  }
  const char *freqs = NULL, *qk = NULL, *bug = NULL;
  for (int a = 3; a + 1 < argc; a += 2) {
    if (strcmp(argv[a], "--freqs") == 0) freqs = argv[a + 1];
    if (strcmp(argv[a], "--qk") == 0) qk = argv[a + 1];
    if (strcmp(argv[a], "--bug") == 0) bug = argv[a + 1];
  }
  // DeepSeek-V3 as llama.cpp's deepseek2 graph passes it: attn_factor = 1/(1 + 0.1*logf(1/fs)).
  volatile float ds_scale_v = 1.0f / 40.0f;  // computed at run time, as the host does
  const float ds_scale = ds_scale_v;
  const float ds_attn = 1.0f / (1.0f + 0.1f * logf(1.0f / ds_scale));
  struct rope_case cases[] = {
      {"plain", "rope:head_dim=128,layout=interleaved", 128, NORMAL, 0, 10000.0f, 1.0f, 0.0f, 1.0f,
       0.0f, 0.0f, 0},
      {"llama3",
       "rope:head_dim=128,rope_theta=500000,layout=interleaved,rope_type=llama3,factor=8,"
       "low_freq_factor=1,high_freq_factor=4,original_max_position_embeddings=8192",
       128, NORMAL, 0, 500000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f, 1},
      // Qwen2.5-7B-Instruct with its YaRN rope_scaling (factor 4, original 32768): llama.cpp's
      // defaults ext_factor 1 (YaRN), attn_factor 1, beta_fast 32, beta_slow 1; NEOX.
      {"yarn-qwen",
       "rope:head_dim=128,rope_theta=1000000,rope_type=yarn,factor=4,"
       "original_max_position_embeddings=32768",
       128, NEOX, 32768, 1000000.0f, 0.25f, 1.0f, 1.0f, 32.0f, 1.0f, 0},
      // DeepSeek-V3: qk_rope_head_dim 64, base 10000, YaRN factor 40, original 4096, mscale =
      // mscale_all_dim = 1; NORMAL mode (interleaved pairs).
      {"yarn-deepseek",
       "rope:head_dim=64,rope_theta=10000,rope_type=yarn,factor=40,"
       "original_max_position_embeddings=4096,mscale=1,mscale_all_dim=1,layout=interleaved",
       64, NORMAL, 4096, 10000.0f, ds_scale, 1.0f, ds_attn, 32.0f, 1.0f, 0},
  };
  struct rope_case* c = NULL;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    if (strcmp(cases[i].name, argv[1]) == 0) c = &cases[i];
  }
  if (!c) {
    fprintf(stderr, "unknown case %s\n", argv[1]);
    return 2;
  }
  if (bug && strcmp(bug, "ramp-off") == 0) c->ext_factor = 0.0f;
  if (bug && strcmp(bug, "attn-not-divided") == 0) {
    // transformers' m: Qwen's get_mscale(4) = 1 + 0.1*ln 4; DeepSeek-V3's mscale/mscale_all_dim
    // ratio 1.
    c->attn_factor = c->mode == NEOX ? 1.0f + 0.1f * logf(1.0f / c->freq_scale) : 1.0f;
  }
  static int32_t pos[4096];
  int P = make_positions(pos);
  const int d = c->n_dims, pairs = d / 2;
  if (qk) {  // every third position: tokens
    int T = 0;
    for (int k = 0; k < P; k += 3) pos[T++] = pos[k];
    P = T;
  }
  int64_t* pos64 = malloc(sizeof(int64_t) * (size_t)P);
  for (int t = 0; t < P; ++t) pos64[t] = pos[t];

  struct ggml_init_params ip = {(size_t)256 << 20, NULL, false};
  struct ggml_context* ctx = ggml_init(ip);
  struct ggml_tensor* p = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, P);
  memcpy(p->data, pos, sizeof(int32_t) * (size_t)P);
  struct ggml_tensor* ff = NULL;
  if (c->llama3) {
    ff = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, pairs);
    // convert_hf_to_gguf.py's rope_freqs (PyTorch fp32), from rope_freqs.py.
    FILE* rf = freqs ? fopen(freqs, "rb") : NULL;
    if (!rf || fread(ff->data, sizeof(float), (size_t)pairs, rf) != (size_t)pairs) {
      fprintf(stderr, "llama3: give the rope_freqs file (rope_freqs.py) with --freqs\n");
      return 2;
    }
    fclose(rf);
  }
  char made_by[256];
  snprintf(made_by, sizeof made_by,
           "ggml ggml_rope_ext (CPU): freq_scale %a ext_factor %a attn_factor %a%s%s",
           (double)c->freq_scale, (double)c->ext_factor, (double)c->attn_factor,
           bug ? "; planted mistake " : "", bug ? bug : "");
  int rc;
  if (!qk) {
    struct ggml_tensor* x = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, d, 1, P);  // [d, heads, T]
    float* xs = (float*)x->data;
    for (int t = 0; t < P; ++t) {
      for (int i = 0; i < pairs; ++i) {
        const int a = c->mode == NEOX ? i : 2 * i, b = c->mode == NEOX ? i + pairs : 2 * i + 1;
        xs[t * d + a] = 1.0f;
        xs[t * d + b] = 0.0f;
      }
    }
    const float* ys = (const float*)rope(ctx, c, x, p, ff)->data;
    float* table = malloc(sizeof(float) * (size_t)P * (size_t)pairs * 2);  // [P, pairs, 2]
    for (int t = 0; t < P; ++t) {
      for (int i = 0; i < pairs; ++i) {
        const int a = c->mode == NEOX ? i : 2 * i, b = c->mode == NEOX ? i + pairs : 2 * i + 1;
        table[((size_t)t * pairs + i) * 2 + 0] = ys[t * d + a];
        table[((size_t)t * pairs + i) * 2 + 1] = ys[t * d + b];
      }
    }
    const struct tensor_out out[] = {
        {"positions", "I64", 1, {P}, pos64, sizeof(int64_t) * (size_t)P},
        {"table", "F32", 3, {P, pairs, 2}, table, sizeof(float) * (size_t)P * (size_t)pairs * 2},
    };
    rc = write_safetensors(argv[2], c->spec, made_by, out, 2);
  } else {
    const int f16 = strcmp(qk, "f16") == 0;
    const enum ggml_type type = f16 ? GGML_TYPE_F16 : GGML_TYPE_F32;
    const size_t es = f16 ? 2 : 4;
    struct ggml_tensor* q = ggml_new_tensor_3d(ctx, type, d, 1, P);  // [d, heads, T]: thd
    struct ggml_tensor* k = ggml_new_tensor_3d(ctx, type, d, 1, P);
    for (int w = 0; w < 2; ++w) {
      struct ggml_tensor* x = w ? k : q;
      const int64_t n = ggml_nelements(x);
      for (int64_t e = 0; e < n; ++e) {
        const float v = normal();
        if (f16) {
          ((ggml_fp16_t*)x->data)[e] = ggml_fp32_to_fp16(v);
        } else {
          ((float*)x->data)[e] = v;
        }
      }
    }
    struct ggml_tensor* qo = rope(ctx, c, q, p, ff);
    struct ggml_tensor* ko = rope(ctx, c, k, p, ff);
    const char* dt = f16 ? "F16" : "F32";
    const struct tensor_out out[] = {
        {"k_in", dt, 3, {P, 1, d}, k->data, es * (size_t)P * (size_t)d},
        {"k_out", dt, 3, {P, 1, d}, ko->data, es * (size_t)P * (size_t)d},
        {"positions", "I64", 1, {P}, pos64, sizeof(int64_t) * (size_t)P},
        {"q_in", dt, 3, {P, 1, d}, q->data, es * (size_t)P * (size_t)d},
        {"q_out", dt, 3, {P, 1, d}, qo->data, es * (size_t)P * (size_t)d},
    };
    rc = write_safetensors(argv[2], c->spec, made_by, out, 5);
  }
  fprintf(stderr, "%s: %d rows x %d pairs; %s\n", c->name, P, pairs, made_by);
  ggml_free(ctx);
  return rc;
}
