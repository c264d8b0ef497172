/* clang-format off */
/* An example pev plugin (pev/plugin/pev_plugin.h): RoPE as Hugging Face transformers computes it in
 * fp32 — inv_freq = 1 / powf(theta, fl(2i) / fl(dim)), linear scaling divides it by the factor, the
 * angle is fl(p) · inv_freq in fp32, cos/sin by cosf/sinf, and q/k rotated in fp32. It serves the
 * `default` and `linear` rope types, both layouts and partial rotary, in fp32; anything else is
 * PEV_UNSUPPORTED. Certify it with
 *
 *     pev certify --spec rope:head_dim=128,rope_theta=500000 \
 *         --plugin build/examples/libpev_example_plugin.so
 *
 * Build:
 *
 *     cc -O2 -ffp-contract=off -shared -fPIC -I verify/include rope_plugin.c -o plugin.so -lm
 *
 * (-ffp-contract=off: no FMA contraction, as PyTorch's elementwise kernels on the CPU). */
/* clang-format on */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pev/plugin/pev_plugin.h"

typedef struct {
  long head_dim;
  double theta, factor, partial;
  int interleaved;
} rope_spec;

/* Parses pev's canonical SPEC string; returns 0 when the spec is one this plugin serves. */
static int parse(const char* spec, rope_spec* s) {
  if (strncmp(spec, "rope:", 5) != 0) return -1;
  s->head_dim = 0;
  s->theta = 10000.0;
  s->factor = 1.0;
  s->partial = 1.0;
  s->interleaved = 0;
  int linear = 0;
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", spec + 5);
  for (char* item = strtok(buf, ","); item; item = strtok(NULL, ",")) {
    char* eq = strchr(item, '=');
    if (!eq) return -1;
    *eq = '\0';
    const char* v = eq + 1;
    if (strcmp(item, "head_dim") == 0) {
      s->head_dim = strtol(v, NULL, 10);
    } else if (strcmp(item, "rope_theta") == 0) {
      s->theta = strtod(v, NULL);
    } else if (strcmp(item, "factor") == 0) {
      s->factor = strtod(v, NULL);
    } else if (strcmp(item, "partial_rotary_factor") == 0) {
      s->partial = strtod(v, NULL);
    } else if (strcmp(item, "layout") == 0) {
      if (strcmp(v, "interleaved") == 0) {
        s->interleaved = 1;
      } else if (strcmp(v, "neox") != 0) {
        return -1;
      }
    } else if (strcmp(item, "rope_type") == 0) {
      if (strcmp(v, "linear") == 0) {
        linear = 1;
      } else if (strcmp(v, "default") != 0) {
        return -1;
      }
    } else {
      return -1; /* a key this plugin does not implement */
    }
  }
  if (!linear) s->factor = 1.0;
  return s->head_dim > 0 ? 0 : -1;
}

static long rotary_dim(const rope_spec* s) { return (long)((double)s->head_dim * s->partial); }

static void inv_freq(const rope_spec* s, float* out) {
  const long dim = rotary_dim(s);
  for (long i = 0; i < dim / 2; ++i) {
    const float exponent = (float)(2 * i) / (float)dim;
    out[i] = 1.0f / powf((float)s->theta, exponent) / (float)s->factor;
  }
}

uint32_t pev_plugin_abi_version(void) { return PEV_PLUGIN_ABI_VERSION; }
const char* pev_plugin_name(void) { return "example-c-hf-rope"; }

int pev_rope_inv_freq(const pev_request* r, float* out, char* err, size_t err_len) {
  rope_spec s;
  (void)err;
  (void)err_len;
  if (parse(r->spec, &s) != 0) return PEV_UNSUPPORTED;
  inv_freq(&s, out);
  return PEV_OK;
}

int pev_rope_table(const pev_request* r, void* cos_out, void* sin_out, char* err, size_t err_len) {
  rope_spec s;
  if (parse(r->spec, &s) != 0 || r->dtype != PEV_DTYPE_F32) return PEV_UNSUPPORTED;
  const long pairs = rotary_dim(&s) / 2;
  float* f = malloc(sizeof(float) * (size_t)(pairs > 0 ? pairs : 1));
  if (!f) {
    snprintf(err, err_len, "out of memory");
    return PEV_ERROR;
  }
  inv_freq(&s, f);
  float* c = cos_out;
  float* sn = sin_out;
  for (int64_t k = 0; k < r->n_positions; ++k) {
    const float pos = (float)r->positions[k];
    for (long i = 0; i < pairs; ++i) {
      const float angle = pos * f[i];
      c[k * pairs + i] = cosf(angle);
      sn[k * pairs + i] = sinf(angle);
    }
  }
  free(f);
  return PEV_OK;
}

int pev_rope_rotate(const pev_request* r, int64_t heads, int64_t head_dim, const void* in,
                    void* out, char* err, size_t err_len) {
  rope_spec s;
  if (parse(r->spec, &s) != 0 || r->dtype != PEV_DTYPE_F32 || head_dim != s.head_dim) {
    return PEV_UNSUPPORTED;
  }
  const long rot = rotary_dim(&s), pairs = rot / 2;
  float* f = malloc(sizeof(float) * (size_t)(pairs > 0 ? pairs : 1));
  if (!f) {
    snprintf(err, err_len, "out of memory");
    return PEV_ERROR;
  }
  inv_freq(&s, f);
  const float* x = in;
  float* y = out;
  for (int64_t t = 0; t < r->n_positions; ++t) {
    const float pos = (float)r->positions[t];
    for (int64_t h = 0; h < heads; ++h) {
      const float* xv = x + (t * heads + h) * head_dim;
      float* yv = y + (t * heads + h) * head_dim;
      for (long d = rot; d < head_dim; ++d) yv[d] = xv[d]; /* pass-through dims */
      for (long i = 0; i < pairs; ++i) {
        const float angle = pos * f[i];
        const float c = cosf(angle), sn = sinf(angle);
        const long a = s.interleaved ? 2 * i : i, b = s.interleaved ? 2 * i + 1 : i + pairs;
        yv[a] = xv[a] * c - xv[b] * sn;
        yv[b] = xv[b] * c + xv[a] * sn;
      }
    }
  }
  free(f);
  return PEV_OK;
}
