// Wrappers for what Swift cannot do with alsa-lib: define the variadic error handler.
// Hardware parameters are allocated with snd_pcm_hw_params_malloc instead of the
// snd_pcm_hw_params_alloca macro.
#ifndef CALSA_SHIM_H
#define CALSA_SHIM_H
#include <alsa/asoundlib.h>

static void CALSA_quiet_error_handler(const char *file, int line, const char *function, int err, const char *fmt, ...) {
    (void)file; (void)line; (void)function; (void)err; (void)fmt;
}

/// Stops alsa-lib printing its own error lines to stderr; callers report errors as
/// typed errors instead.
static inline void CALSA_silence_library_errors(void) { snd_lib_error_set_handler(CALSA_quiet_error_handler); }

#endif
