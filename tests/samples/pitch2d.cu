/* SPDX-License-Identifier: Apache-2.0 */
// pitch2d.cu - pitched memory and 2D/3D copies, as CUDA's samples use them:
// cudaMallocPitch and cudaMalloc3D, cudaMemcpy2D of every kind (and
// cudaMemcpyDefault), cudaMemcpy2DAsync on a stream, cudaMemset2D(Async),
// cudaMemcpy3D(Async) of pitched pointers, and a 2D copy whose rows leave
// the allocation, which must be refused while the program carries on.
// Every result is compared with the same operation done on the host. The
// last line says "RESULT workload=pitch2d verified=yes" when all hold
// (tests/e2e/samples_pitch.sh runs it built with -cudart shared and with
// nvcc's default static runtime).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

static int failures;

#define CHECK(call)                                                                                          \
	do {                                                                                                 \
		cudaError_t e_ = (call);                                                                     \
		if (e_ != cudaSuccess) {                                                                     \
			printf("pitch2d: line %d: %s returned %s\n", __LINE__, #call, cudaGetErrorName(e_)); \
			failures++;                                                                          \
		}                                                                                            \
	} while (0)

static void expect(bool ok, const char *what)
{
	if (!ok) {
		printf("pitch2d: %s: wrong\n", what);
		failures++;
	} else {
		printf("pitch2d: %s ok\n", what);
	}
}

int main()
{
	const size_t w = 100, h = 37; // bytes per row, rows: deliberately unaligned
	int align = 0;
	CHECK(cudaDeviceGetAttribute(&align, cudaDevAttrTexturePitchAlignment, 0));

	unsigned char *a, *b;
	size_t pa = 0, pb = 0;
	CHECK(cudaMallocPitch((void **)&a, &pa, w, h));
	CHECK(cudaMallocPitch((void **)&b, &pb, w, h));
	expect(align > 0 && pa >= w && pa % align == 0 && pb == pa, "cudaMallocPitch pitch");

	// Host rows with a pitch of their own (w + 13), bytes a function of the
	// position so every misplaced byte shows.
	const size_t hp = w + 13;
	unsigned char *host = (unsigned char *)malloc(hp * h), *back = (unsigned char *)malloc(hp * h);
	unsigned char *want = (unsigned char *)malloc(hp * h);
	for (size_t i = 0; i < hp * h; i++)
		host[i] = (unsigned char)(i * 7 + 3);

	// Host to device to host, every row through pitched memory.
	CHECK(cudaMemset2D(a, pa, 0, pa, h));
	CHECK(cudaMemcpy2D(a, pa, host, hp, w, h, cudaMemcpyHostToDevice));
	memset(back, 0xee, hp * h);
	CHECK(cudaMemcpy2D(back, hp, a, pa, w, h, cudaMemcpyDeviceToHost));
	memset(want, 0xee, hp * h);
	for (size_t y = 0; y < h; y++)
		memcpy(want + y * hp, host + y * hp, w);
	expect(!memcmp(back, want, hp * h), "cudaMemcpy2D host to device to host");

	// The padding between rows must be untouched by the 2D copy: read
	// the whole pitched block back contiguously.
	unsigned char *whole = (unsigned char *)malloc(pa * h);
	CHECK(cudaMemcpy(whole, a, pa * h, cudaMemcpyDeviceToHost));
	bool pad_ok = true;
	for (size_t y = 0; y < h; y++)
		for (size_t x = 0; x < pa; x++)
			pad_ok &= whole[y * pa + x] == (x < w ? host[y * hp + x] : 0);
	expect(pad_ok, "rows land at the pitch, padding untouched");

	// Device to device, a sub-rectangle (offset columns and rows).
	CHECK(cudaMemset2D(b, pb, 0x11, w, h));
	CHECK(cudaMemcpy2D(b + 2 * pb + 5, pb, a + 1 * pa + 3, pa, w - 10, h - 4, cudaMemcpyDeviceToDevice));
	CHECK(cudaMemcpy2D(back, w, b, pb, w, h, cudaMemcpyDeviceToHost));
	bool dd_ok = true;
	for (size_t y = 0; y < h; y++)
		for (size_t x = 0; x < w; x++) {
			bool in = y >= 2 && y < 2 + h - 4 && x >= 5 && x < 5 + w - 10;
			unsigned char v = in ? host[(y - 2 + 1) * hp + (x - 5 + 3)] : 0x11;
			dd_ok &= back[y * w + x] == v;
		}
	expect(dd_ok, "cudaMemcpy2D device to device (sub-rectangle) and cudaMemset2D");

	// cudaMemcpyDefault infers each direction; host to host too.
	memset(back, 0, hp * h);
	CHECK(cudaMemcpy2D(b, pb, host, hp, w, h, cudaMemcpyDefault));
	CHECK(cudaMemcpy2D(a, pa, b, pb, w, h, cudaMemcpyDefault));
	CHECK(cudaMemcpy2D(back, hp, a, pa, w, h, cudaMemcpyDefault));
	memset(want, 0, hp * h);
	for (size_t y = 0; y < h; y++)
		memcpy(want + y * hp, host + y * hp, w);
	expect(!memcmp(back, want, hp * h), "cudaMemcpy2D with cudaMemcpyDefault");
	memset(back, 0, hp * h);
	CHECK(cudaMemcpy2D(back, hp, host, hp, w, h, cudaMemcpyHostToHost));
	expect(!memcmp(back, want, hp * h), "cudaMemcpy2D host to host");

	// The async forms on a stream, then a 2D memset on it.
	cudaStream_t s;
	CHECK(cudaStreamCreate(&s));
	CHECK(cudaMemset2DAsync(a, pa, 0x5c, w, h, s));
	CHECK(cudaMemcpy2DAsync(a, pa, host, hp, w / 2, h, cudaMemcpyHostToDevice, s));
	CHECK(cudaMemcpy2DAsync(b, pb, a, pa, w, h, cudaMemcpyDeviceToDevice, s));
	memset(back, 0, hp * h);
	CHECK(cudaMemcpy2DAsync(back, hp, b, pb, w, h, cudaMemcpyDeviceToHost, s));
	CHECK(cudaStreamSynchronize(s));
	bool as_ok = true;
	for (size_t y = 0; y < h; y++)
		for (size_t x = 0; x < w; x++)
			as_ok &= back[y * hp + x] == (x < w / 2 ? host[y * hp + x] : 0x5c);
	expect(as_ok, "cudaMemcpy2DAsync of every kind and cudaMemset2DAsync");

	// 3D: a pitched volume, written from a packed host volume, copied
	// device to device into a second one at an offset, read back.
	const size_t vw = 24, vh = 5, vd = 4;
	cudaPitchedPtr v1, v2;
	CHECK(cudaMalloc3D(&v1, make_cudaExtent(vw, vh, vd)));
	CHECK(cudaMalloc3D(&v2, make_cudaExtent(vw, vh + 2, vd)));
	expect(v1.pitch >= vw && v1.pitch % align == 0 && v1.ysize == vh, "cudaMalloc3D pitched pointer");
	unsigned char vol[vd][vh][vw], vback[vd][vh][vw];
	for (size_t z = 0; z < vd; z++)
		for (size_t y = 0; y < vh; y++)
			for (size_t x = 0; x < vw; x++)
				vol[z][y][x] = (unsigned char)(z * 53 + y * 11 + x);
	cudaMemcpy3DParms p = {};
	p.srcPtr = make_cudaPitchedPtr(vol, vw, vw, vh);
	p.dstPtr = v1;
	p.extent = make_cudaExtent(vw, vh, vd);
	p.kind = cudaMemcpyHostToDevice;
	CHECK(cudaMemcpy3D(&p));
	CHECK(cudaMemset3D(v2, 0, make_cudaExtent(v2.pitch, vh + 2, vd)));
	cudaMemcpy3DParms q = {};
	q.srcPtr = v1;
	q.dstPtr = v2;
	q.dstPos = make_cudaPos(0, 1, 0); // one row down in each slice
	q.extent = make_cudaExtent(vw, vh, vd);
	q.kind = cudaMemcpyDeviceToDevice;
	CHECK(cudaMemcpy3DAsync(&q, s));
	cudaMemcpy3DParms r = {};
	r.srcPtr = v2;
	r.srcPos = make_cudaPos(0, 1, 0);
	r.dstPtr = make_cudaPitchedPtr(vback, vw, vw, vh);
	r.extent = make_cudaExtent(vw, vh, vd);
	r.kind = cudaMemcpyDeviceToHost;
	CHECK(cudaMemcpy3DAsync(&r, s));
	CHECK(cudaStreamSynchronize(s));
	expect(!memcmp(vol, vback, sizeof vol), "cudaMemcpy3D(Async) host to device, device to device, to host");
	unsigned char row0[vw];
	CHECK(cudaMemcpy(row0, (unsigned char *)v2.ptr + v2.pitch * (vh + 2) * 2, vw, cudaMemcpyDeviceToHost));
	bool zero = true;
	for (size_t x = 0; x < vw; x++)
		zero &= row0[x] == 0;
	expect(zero, "cudaMemcpy3D left the rows outside the box alone");

	// Rows that leave the allocation: refused, and the program goes on.
	cudaError_t e = cudaMemcpy2D(b, pb, a, pa, w, h + 1, cudaMemcpyDeviceToDevice);
	(void)cudaGetLastError();
	expect(e != cudaSuccess, "a 2D copy past the end of its allocation is refused");
	e = cudaMemcpy2D(back, hp, a, pa, pa + 1, 2, cudaMemcpyDeviceToHost);
	(void)cudaGetLastError();
	expect(e == cudaErrorInvalidPitchValue, "a width beyond the pitch is refused");
	e = cudaMemset2D(a, pa, 0, w, h * 2);
	(void)cudaGetLastError();
	expect(e != cudaSuccess, "a 2D memset past the end of its allocation is refused");
	CHECK(cudaMemcpy2D(back, hp, a, pa, w, h, cudaMemcpyDeviceToHost));
	expect(back[0] == host[0], "the channel still works after the refusals");

	CHECK(cudaStreamDestroy(s));
	CHECK(cudaFree(a));
	CHECK(cudaFree(b));
	CHECK(cudaFree(v1.ptr));
	CHECK(cudaFree(v2.ptr));
	free(host);
	free(back);
	free(want);
	free(whole);
	printf("RESULT workload=pitch2d verified=%s failures=%d\n", failures ? "no" : "yes", failures);
	return failures ? 1 : 0;
}
