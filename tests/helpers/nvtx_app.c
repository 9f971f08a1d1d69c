/* nvtx_app.c -- a CPU program for the tests that profile with a real nsys
 * (tests/e2e/test_real_nsys.sh): STEPS NVTX "step" ranges (push/pop), each
 * holding one "compute" range around a nanosleep of 20 ms and one "io" range
 * around a write and a read through a pipe, a "checkpoint" mark per step and
 * one start/end range "run" around them all; then it prints what it did, so
 * the test checks the trace against the program's own account.  NVTX v2
 * through Debian's libnvtoolsext1 (libnvToolsExt.so.1), whose header comes
 * only with nvidia-cuda-dev: the five functions used are declared here as
 * nvToolsExt.h declares them. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int nvtxRangePushA(const char *message);
int nvtxRangePop(void);
void nvtxMarkA(const char *message);
uint64_t nvtxRangeStartA(const char *message);
void nvtxRangeEnd(uint64_t id);

int main(int argc, char **argv) {
  int steps = argc > 1 ? atoi(argv[1]) : 3;
  int fds[2];
  if (steps < 1 || pipe(fds) != 0) return 2;
  uint64_t run = nvtxRangeStartA("run");
  char byte = 'x';
  int io = 0;
  for (int i = 0; i < steps; i++) {
    nvtxRangePushA("step");
    nvtxRangePushA("compute");
    nanosleep(&(struct timespec){0, 20000000}, NULL);
    nvtxRangePop();
    nvtxRangePushA("io");
    io += write(fds[1], &byte, 1) == 1 && read(fds[0], &byte, 1) == 1;
    nvtxRangePop();
    nvtxMarkA("checkpoint");
    nvtxRangePop();
  }
  nvtxRangeEnd(run);
  printf("steps %d nanosleep %d io %d\n", steps, steps, io);
  return io == steps ? 0 : 1;
}
