/* Starts XRay's flight-data-recorder mode before main and writes its log after main. FDR records
 * nothing from environment variables alone: it must be initialised, patched, finalised and flushed
 * explicitly. Buffers: 1 MiB x 1024 (1 GiB), enough for fib(32)'s 14 M events (with the defaults it
 * kept 1.4% of them), and func_duration_threshold_us=0: by default FDR elides calls shorter than
 * 5 us, which would be nearly all of them here. Compiled without -fxray-instrument (C++: the XRay headers are). */
#include <cstdio>

#include <xray/xray_interface.h>
#include <xray/xray_log_interface.h>

__attribute__((constructor)) static void startXray(void) {
  static const char kConfig[] =
      "buffer_size=1048576:buffer_max=1024:func_duration_threshold_us=0";
  if (__xray_log_select_mode("xray-fdr") != XRAY_REGISTRATION_OK ||
      __xray_log_init_mode("xray-fdr", kConfig) != XRAY_LOG_INITIALIZED) {
    fprintf(stderr, "xray_fdr_setup: cannot initialise FDR mode\n");
    return;
  }
  __xray_patch();
}

__attribute__((destructor)) static void stopXray(void) {
  __xray_unpatch();
  __xray_log_finalize();
  __xray_log_flushLog();
}
