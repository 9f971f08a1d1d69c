// A small training-like loop for one GPU check: per step an H2D copy, a host stall inside an NVTX range
// (the GPU idles while the host is in "data_loader"), three kernels, a sync and a small D2H copy.
#include <cstdio>
#include <unistd.h>
#include <nvtx3/nvToolsExt.h>
__global__ void spin(float *x, int n, long long cycles) {
  long long t0 = clock64();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  while (clock64() - t0 < cycles) { if (i < n) x[i] = x[i] * 0.999f + 1.0f; }
}
int main() {
  const int n = 1 << 24;
  float *h, *d;
  cudaMallocHost(&h, n * sizeof(float));
  cudaMalloc(&d, n * sizeof(float));
  for (int i = 0; i < n; i++) h[i] = 1.0f;
  cudaStream_t s; cudaStreamCreate(&s);
  for (int step = 0; step < 12; step++) {
    nvtxRangePushA("train_step");
    nvtxRangePushA("data_loader");
    usleep(step == 7 ? 20000 : 3000);   // the host stalls; step 7 is slow
    nvtxRangePop();
    cudaMemcpyAsync(d, h, n * sizeof(float), cudaMemcpyHostToDevice, s);
    nvtxRangePushA("forward");
    for (int k = 0; k < 3; k++) spin<<<(n + 255) / 256, 256, 0, s>>>(d, n, 2000000LL);
    nvtxRangePop();
    cudaMemcpyAsync(h, d, 1024 * sizeof(float), cudaMemcpyDeviceToHost, s);
    cudaStreamSynchronize(s);
    nvtxRangePop();
  }
  printf("done %f\n", h[0]);
  return 0;
}
