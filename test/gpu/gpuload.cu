// gpuload: a controllable GPU load for jobscope's real-GPU test (test/gpu/run.sh).
// It reads one command per line on stdin and prints one line per event on
// stdout, each starting with the wall-clock time in nanoseconds, so the
// harness can line up its scrapes with what the GPU was doing:
//   start        create the CUDA context (sent after the harness moved this
//                process into the job's cgroup)
//   alloc MIB    cudaMalloc and touch MIB mebibytes, then print cudaMemGetInfo
//   meminfo      print cudaMemGetInfo
//   busy SEC     FP32 FMA kernels on every SM for SEC seconds
//   tensor SEC   tensor-core (WMMA f16 -> f32) kernels for SEC seconds
//   free         release what alloc took
//   exit
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>
#include <cuda_runtime.h>
#include <mma.h>

static long long now_ns() {
	timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

#define CHECK(call)                                                                     \
	do {                                                                                \
		cudaError_t e = (call);                                                         \
		if (e != cudaSuccess) {                                                         \
			printf("%lld error %s %s\n", now_ns(), #call, cudaGetErrorString(e));       \
			fflush(stdout);                                                             \
			exit(1);                                                                    \
		}                                                                               \
	} while (0)

// Spins on the SM clock so one launch lasts a known time whatever the
// clock speed; the FMAs keep the FP32 pipes busy.
__global__ void fma_kernel(long long cycles, float *out) {
	float a = threadIdx.x, b = 1.0001f, c = 0.5f;
	long long start = clock64();
	while (clock64() - start < cycles) {
#pragma unroll 16
		for (int i = 0; i < 64; i++) a = fmaf(a, b, c);
	}
	if (a == -1.0f) out[0] = a; // never true: keeps the loop alive
}

__global__ void tensor_kernel(long long cycles, float *out) {
	using namespace nvcuda;
	wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
	wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
	wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
	wmma::fill_fragment(fa, __float2half(0.001f));
	wmma::fill_fragment(fb, __float2half(0.001f));
	wmma::fill_fragment(acc, 0.0f);
	long long start = clock64();
	while (clock64() - start < cycles) {
#pragma unroll 8
		for (int i = 0; i < 32; i++) wmma::mma_sync(acc, fa, fb, acc);
	}
	if (acc.x[0] == -1.0f) out[0] = acc.x[0];
}

static void meminfo(const char *what) {
	size_t free_b = 0, total_b = 0;
	CHECK(cudaMemGetInfo(&free_b, &total_b));
	printf("%lld meminfo %s free=%zu total=%zu used=%zu\n", now_ns(), what, free_b, total_b, total_b - free_b);
	fflush(stdout);
}

int main() {
	std::vector<void *> bufs;
	float *out = nullptr;
	int sms = 0, khz = 0;
	char line[256];
	while (fgets(line, sizeof line, stdin)) {
		char cmd[32] = {0};
		double arg = 0;
		sscanf(line, "%31s %lf", cmd, &arg);
		if (!strcmp(cmd, "start")) {
			CHECK(cudaSetDevice(0));
			CHECK(cudaFree(0));
			CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
			CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
			CHECK(cudaMalloc(&out, 4));
			printf("%lld started sms=%d clock_khz=%d\n", now_ns(), sms, khz);
			meminfo("context");
		} else if (!strcmp(cmd, "alloc")) {
			void *p = nullptr;
			size_t n = (size_t)arg << 20;
			CHECK(cudaMalloc(&p, n));
			CHECK(cudaMemset(p, 1, n));
			CHECK(cudaDeviceSynchronize());
			bufs.push_back(p);
			printf("%lld allocated bytes=%zu\n", now_ns(), n);
			meminfo("allocated");
		} else if (!strcmp(cmd, "meminfo")) {
			meminfo("asked");
		} else if (!strcmp(cmd, "busy") || !strcmp(cmd, "tensor")) {
			bool tensor = cmd[0] == 't';
			// 50 ms launches at the rated clock: short enough to stop on time.
			long long cycles = (long long)khz * 50;
			long long end = now_ns() + (long long)(arg * 1e9);
			printf("%lld begin %s\n", now_ns(), cmd);
			fflush(stdout);
			int launches = 0;
			while (now_ns() < end) {
				if (tensor)
					tensor_kernel<<<sms * 4, 128>>>(cycles, out);
				else
					fma_kernel<<<sms * 4, 256>>>(cycles, out);
				CHECK(cudaGetLastError());
				CHECK(cudaDeviceSynchronize());
				launches++;
			}
			printf("%lld end %s launches=%d\n", now_ns(), cmd, launches);
		} else if (!strcmp(cmd, "free")) {
			for (void *p : bufs) CHECK(cudaFree(p));
			bufs.clear();
			printf("%lld freed\n", now_ns());
			meminfo("freed");
		} else if (!strcmp(cmd, "exit")) {
			break;
		}
		fflush(stdout);
	}
	printf("%lld exit\n", now_ns());
	return 0;
}
