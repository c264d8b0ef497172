/* clang-format off */
/* pev_plugin.h — pev's C ABI for live implementations loaded with dlopen (`pev certify --plugin`).
 *
 * ABI version 1. A plugin is a shared library exporting `pev_plugin_abi_version` (required) and any
 * of the entry points below; a missing entry point means "not supported". pev calls them from one
 * thread at a time. Every call gets a pev_request: the encoding as pev's canonical SPEC string (see
 * `pev list`; parse only what you support and return PEV_UNSUPPORTED for the rest), the output
 * dtype, the sequence length of stateful rope types, and the positions. Outputs are row-major, in
 * the requested dtype: float for PEV_DTYPE_F32, the IEEE binary16 or bfloat16 encodings (uint16_t)
 * for the 16-bit types. On PEV_ERROR write a NUL-terminated message into err (at most err_len
 * bytes).
 *
 * Shapes (pairs = rotary_dim / 2):
 *   pev_rope_table      cos, sin: [n_positions, pairs], already multiplied by the attention
 *                       factor
 *   pev_rope_inv_freq   out: [pairs] float (the per-pair frequencies the table uses)
 *   pev_rope_rotate     in, out: [n_positions, heads, head_dim] (token t at positions[t]); out
 *                       never aliases in
 *   pev_sinusoidal_pe   out: [n_positions, d_model]
 */
/* clang-format on */
#ifndef PEV_PLUGIN_H
#define PEV_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PEV_PLUGIN_ABI_VERSION 1u

enum pev_dtype { PEV_DTYPE_F32 = 1, PEV_DTYPE_F16 = 2, PEV_DTYPE_BF16 = 3 };
enum pev_status { PEV_OK = 0, PEV_UNSUPPORTED = 1, PEV_ERROR = 2 };

typedef struct pev_request {
  uint32_t abi_version;     /* PEV_PLUGIN_ABI_VERSION */
  const char* spec;         /* canonical SPEC string */
  int32_t dtype;            /* enum pev_dtype */
  int64_t seq_len;          /* dynamic / longrope sequence length; -1: none */
  const int64_t* positions; /* n_positions positions (int64, ≥ 0) */
  int64_t n_positions;
} pev_request;

/* Required: returns PEV_PLUGIN_ABI_VERSION of the header the plugin was built with. */
typedef uint32_t (*pev_plugin_abi_version_fn)(void);
/* Optional: a name for reports. */
typedef const char* (*pev_plugin_name_fn)(void);
typedef int (*pev_rope_table_fn)(const pev_request* r, void* cos, void* sin, char* err,
                                 size_t err_len);
typedef int (*pev_rope_inv_freq_fn)(const pev_request* r, float* out, char* err, size_t err_len);
typedef int (*pev_rope_rotate_fn)(const pev_request* r, int64_t heads, int64_t head_dim,
                                  const void* in, void* out, char* err, size_t err_len);
typedef int (*pev_sinusoidal_pe_fn)(const pev_request* r, void* out, char* err, size_t err_len);

/* Symbol names pev looks up. */
#define PEV_PLUGIN_SYMBOL_ABI_VERSION "pev_plugin_abi_version"
#define PEV_PLUGIN_SYMBOL_NAME "pev_plugin_name"
#define PEV_PLUGIN_SYMBOL_ROPE_TABLE "pev_rope_table"
#define PEV_PLUGIN_SYMBOL_ROPE_INV_FREQ "pev_rope_inv_freq"
#define PEV_PLUGIN_SYMBOL_ROPE_ROTATE "pev_rope_rotate"
#define PEV_PLUGIN_SYMBOL_SINUSOIDAL_PE "pev_sinusoidal_pe"

#ifdef __cplusplus
}
#endif

#endif /* PEV_PLUGIN_H */
