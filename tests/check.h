/* check.h - tiny assertion helpers shared by the C unit tests: a failed check
 * prints file:line and the expression, and the test's exit status counts. */
#ifndef PTC_TESTS_CHECK_H
#define PTC_TESTS_CHECK_H

#include <stdio.h>
#include <string.h>

#include <ptc/ptc.h>

static int check_failures = 0;
static int check_total = 0;

#define CHECK(cond)                                                  \
  do {                                                               \
    check_total++;                                                   \
    if (!(cond)) {                                                   \
      check_failures++;                                              \
      printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);         \
    }                                                                \
  } while (0)

/* Expects success; prints the status message otherwise and frees it. */
#define CHECK_OK(expr)                                                              \
  do {                                                                              \
    ptc_status check_s_ = (expr);                                                   \
    check_total++;                                                                  \
    if (check_s_) {                                                                 \
      check_failures++;                                                             \
      printf("FAIL %s:%d: %s -> %s\n", __FILE__, __LINE__, #expr,                   \
             ptc_status_message(check_s_));                                         \
      ptc_status_destroy(check_s_);                                                 \
    }                                                                               \
  } while (0)

/* Expects an error with `code` whose message contains `substr`. */
#define CHECK_ERR(expr, code, substr)                                                   \
  do {                                                                                  \
    ptc_status check_s_ = (expr);                                                       \
    check_total++;                                                                      \
    if (!check_s_ || ptc_status_code(check_s_) != (code) ||                             \
        !strstr(ptc_status_message(check_s_), (substr))) {                              \
      check_failures++;                                                                 \
      printf("FAIL %s:%d: %s -> %s '%s', expected %s containing '%s'\n", __FILE__,      \
             __LINE__, #expr, ptc_code_name(ptc_status_code(check_s_)),                 \
             ptc_status_message(check_s_), ptc_code_name(code), (substr));              \
    }                                                                                   \
    ptc_status_destroy(check_s_);                                                       \
  } while (0)

static inline int check_summary(const char* name) {
  printf("%s: %d checks, %d passed, %d failed\n", name, check_total, check_total - check_failures,
         check_failures);
  return check_failures ? 1 : 0;
}

#endif
