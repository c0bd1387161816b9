/* test_kcache.c - the kernel cache's file helpers (lib/runtime/kcache.c):
 * an atomic write read back whole (kcache_read) and as a small text record
 * (kcache_read_text: NUL-terminated, cut to the buffer, false for a missing
 * file), the form the cuda backend's tuning records are read in. */
#include "lib/runtime/kcache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

int main(void) {
  char dir[] = "/tmp/ptc-test-kcache-XXXXXX";
  if (!mkdtemp(dir)) {
    printf("cannot create a temporary folder\n");
    return 1;
  }
  char path[256];
  snprintf(path, sizeof path, "%s/rec.tune", dir);
  const char* rec = "ptc-tune-1 block 256 1 waves 8\n";
  CHECK_OK(kcache_write_atomic(path, rec, strlen(rec)));

  char* data = NULL;
  size_t len = 0;
  CHECK_OK(kcache_read(path, &data, &len));
  CHECK(data && len == strlen(rec) && memcmp(data, rec, len) == 0);
  free(data);

  char text[64];
  memset(text, 'x', sizeof text);
  CHECK(kcache_read_text(path, text, sizeof text));
  CHECK(strcmp(text, rec) == 0);
  char small[11];
  CHECK(kcache_read_text(path, small, sizeof small)); /* cut, still terminated */
  CHECK(strcmp(small, "ptc-tune-1") == 0);

  char missing[300];
  snprintf(missing, sizeof missing, "%s/none.tune", dir);
  strcpy(text, "unchanged");
  CHECK(!kcache_read_text(missing, text, sizeof text));
  CHECK(strcmp(text, "unchanged") == 0);

  unlink(path);
  rmdir(dir);
  printf("test_kcache: %d checks, %d passed, %d failed\n", check_total,
         check_total - check_failures, check_failures);
  return check_failures ? 1 : 0;
}
